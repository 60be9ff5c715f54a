/**
 * How the API's node process is started: `npm run start:api`, the API image
 * (Dockerfile) and the benchmarks (`bench/hot-path.ts`, `bench/soak.ts`) all
 * use these, and test/start-commands.test.ts keeps the first two in step with this
 * file. Read by V8 and glibc before any of the API's code runs, so they are
 * flags and variables of the start command, not settings.
 */

/**
 * V8's young generation: 4 MB semi-spaces instead of Node's 16 MB. At the
 * default the API settled at about 160 MB resident under a steady load (a
 * 10-minute soak) with a 30 MB sawtooth; its requests allocate little that
 * lives long, so smaller semi-spaces collect the same garbage sooner
 * (docs/performance.md). The old space is left at Node's limit: the
 * definitions index grows with the registered activities (10,000 of them
 * are tens of MB), and a cap would turn that growth into a crash.
 */
export const API_NODE_FLAGS = ['--max-semi-space-size=4'] as const;

/** glibc's malloc arenas: up to 8 per core by default; the API's few threads need two. */
export const API_PROCESS_ENV = { MALLOC_ARENA_MAX: '2' } as const;
