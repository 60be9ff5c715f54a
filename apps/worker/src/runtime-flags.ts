/**
 * How the worker's node process is started: `npm run start:worker`, the
 * worker image (Dockerfile) and `bench/hot-path.ts` all use these, and
 * test/start-commands.test.ts keeps the first two in step with this file.
 *
 * They bound the worker's memory (docs/operating.md, "Worker memory"). They
 * are read by V8 and glibc before any of the worker's code runs, so they are
 * flags and variables of the start command, not settings @activity-core/config
 * could parse: the cache and slot sizes that can be settings are
 * WORKER_MAX_* there.
 */

/**
 * V8 heap limits, for the main isolate and the workflow thread's alike (V8
 * flags apply to every isolate). At its default heap limit (here about
 * 4 GiB) V8 lets garbage pile up long before it collects, and young
 * generations of 16 MB semi-spaces: 400–500 MB resident after 1,000 runs,
 * against about 235 MB with these (docs/performance.md). 384 MB of old space
 * leaves room over what the worker holds at the default cache and slot sizes
 * (well under 150 MB per isolate); raise it with WORKER_MAX_CACHED_WORKFLOWS
 * or WORKER_MAX_CONCURRENT_ACTIVITIES, or the process dies out of memory.
 */
export const WORKER_NODE_FLAGS = ['--max-old-space-size=384', '--max-semi-space-size=4'] as const;

/**
 * glibc keeps up to 8 malloc arenas per core for the SDK's native threads,
 * each holding freed memory of its own; two are plenty for one worker.
 */
export const WORKER_PROCESS_ENV = { MALLOC_ARENA_MAX: '2' } as const;
