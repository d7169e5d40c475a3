// Polling for a state to converge (no ava here: helpers that run outside a test file, such as a private
// nats-server started by a child process, use it too).

/** Polls until `check` holds; on timeout throws with `describe()` (the state that did not converge). */
export async function until(
  check: () => boolean | Promise<boolean>,
  ms: number,
  describe: () => string,
): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`not reached within ${ms} ms: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return Date.now() - started;
}
