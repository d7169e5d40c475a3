// Shared by the order benchmarks: what the service's own /metrics say about its group commit.

/** Sum and count of the group-commit batch-size histogram over every instance (requests, transactions). */
export async function groupCommitBatches(urls: string[]): Promise<{ sum: number; count: number }> {
  const total = { sum: 0, count: 0 };
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    total.sum += Number(/^marketplace_group_commit_batch_size_sum (\S+)$/m.exec(text)?.[1] ?? 0);
    total.count += Number(/^marketplace_group_commit_batch_size_count (\S+)$/m.exec(text)?.[1] ?? 0);
  }
  return total;
}
