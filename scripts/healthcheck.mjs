/* global fetch, AbortSignal */
// The images' Docker HEALTHCHECK (see Dockerfile); no dependencies, exits 0 when healthy.
//   node scripts/healthcheck.mjs api     GET /healthz on PORT: the API process is up and serving
//                                        (liveness; /readyz, which also asks Postgres and Temporal,
//                                        is for a load balancer, not for restarting the process)
//   node scripts/healthcheck.mjs worker  GET /metrics where WORKER_METRICS_BIND_ADDRESS serves the
//                                        SDK's exporter: the worker process and its runtime are up;
//                                        always healthy when that setting is unset
// It reads the same variables the process was started with, outside the app's config on purpose:
// it must stay tiny and import nothing.
const which = process.argv[2];
let url;
if (which === 'api') {
  url = `http://127.0.0.1:${process.env.PORT || '3000'}/healthz`;
} else if (which === 'worker') {
  const address = process.env.WORKER_METRICS_BIND_ADDRESS;
  if (!address) process.exit(0);
  url = `http://127.0.0.1:${address.slice(address.lastIndexOf(':') + 1)}/metrics`;
} else {
  console.error('usage: node scripts/healthcheck.mjs api|worker');
  process.exit(2);
}
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(4_000) });
  process.exit(response.ok ? 0 : 1);
} catch (error) {
  console.error(`${url}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
