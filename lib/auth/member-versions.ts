// Access tokens are stateless, so without this a password change or a role change would reach them only when
// they expire (up to an hour). Every authenticated request compares the token's role and token version (the
// `ver` claim) with the member's current ones, read through a short cache. A change takes effect at once in the
// process that made it and, in a cluster, on every instance the `membersChanged` event reaches over NATS
// (lib/cluster/app-events.ts); the cache's TTL (at most 60 s, AUTH_MEMBER_CACHE_SECONDS) bounds it where an event
// is lost, and a reconnect to NATS drops every copy (`cachesStale`). A token newer than the cached version is never
// refused for it: the cache is read again.
import type { Role } from '../config';
import type { Db } from '../db';
import { createCache, type CacheObserver } from '../cache';
import { UnauthenticatedError } from '../errors';
import type { AccessClaims, AuthMember } from './tokens';

interface MemberState {
  role: Role;
  tokenVersion: number;
  exists: boolean;
}

export function createMemberVersions(deps: {
  db: Db;
  ttlSeconds: number;
  maxEntries?: number;
  cacheObserver?: CacheObserver;
}) {
  const { db } = deps;
  const cache = createCache<MemberState>(deps.ttlSeconds, {
    maxEntries: deps.maxEntries,
    name: 'member_versions',
    observer: deps.cacheObserver,
  });

  async function load(memberId: number): Promise<MemberState> {
    const row = (await db('members').where('id', memberId).first('role', 'token_version')) as
      { role: Role; token_version: number | string } | undefined;
    // A deleted member is cached too, so a flood of its tokens costs one lookup per TTL.
    return row
      ? { role: row.role, tokenVersion: Number(row.token_version), exists: true }
      : { role: 'BUYER', tokenVersion: -1, exists: false };
  }

  return {
    /** The AccessCheck of the token service: the claims if they still hold, else 401 INVALID_TOKEN. */
    async check(claims: AccessClaims): Promise<AuthMember> {
      const key = String(claims.id);
      let state = await cache.getOrLoad(key, () => load(claims.id));
      // Versions only go up: a token newer than the cached version was issued after a change made elsewhere (a
      // login on the instance that changed the password), so the cache is stale, not the token. Read again.
      // Through the cache's load, not beside it: a forget() while it runs keeps its result out of the cache.
      if (state.exists && claims.tokenVersion > state.tokenVersion) {
        cache.del(key);
        state = await cache.getOrLoad(key, () => load(claims.id));
      }
      if (!state.exists) {
        throw new UnauthenticatedError('INVALID_TOKEN', 'The member of this token no longer exists');
      }
      if (state.tokenVersion !== claims.tokenVersion || state.role !== claims.role) {
        throw new UnauthenticatedError(
          'INVALID_TOKEN',
          "Token is no longer valid: the member's password or role changed; refresh or log in again",
        );
      }
      return { id: claims.id, role: claims.role };
    },

    /** A member's password or role changed (here or on another instance): its tokens stop working at once here. */
    forget(memberId: number): void {
      cache.del(String(memberId));
    },

    /** Change events may have been missed: every member's version is read again. */
    forgetAll(): void {
      cache.flush();
    },

    close(): void {
      cache.close();
    },
  };
}

export type MemberVersions = ReturnType<typeof createMemberVersions>;
