import { kindsOf, type Family } from '../../config/registry.js';
import type { BuildInfo } from '../build-info.js';
import { jsonResponse, type AdminEndpoint } from '../handler.js';

// A record rather than an array so the compiler flags a family added to `Family` but not here.
const FAMILIES: Readonly<Record<Family, true>> = {
  protocol: true,
  logger: true,
  namer: true,
  identifier: true,
  h2Identifier: true,
  interpreter: true,
  transformer: true,
  responseClassifier: true,
  failureAccrual: true,
  loadBalancer: true,
  telemeter: true,
  tracePropagator: true,
  requestAuthorizer: true,
  announcer: true,
  clientTls: true,
  storage: true,
  iface: true,
};

/** Environment variable names whose values are never shown. */
const SECRET_NAME = /TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL/i;

/** The value shown in place of a secret. */
export const REDACTED = '<redacted>';

/**
 * The default selection of environment variables: prx's own (`PRX_*`), the runtime's
 * (`NODE_*`, `UV_*`) and the few that describe where the process runs.
 */
export function defaultEnvFilter(name: string): boolean {
  return /^(PRX_|NODE_|UV_)/.test(name) || ['HOSTNAME', 'POD_NAMESPACE', 'MESOS_TASK_ID', 'TZ', 'LANG'].includes(name);
}

/** The selected variables, sorted, with secrets replaced by {@link REDACTED}. */
export function redactedEnv(env: NodeJS.ProcessEnv, select: (name: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(env).filter(select).sort()) {
    const value = env[name];
    if (value !== undefined) out[name] = SECRET_NAME.test(name) ? REDACTED : value;
  }
  return out;
}

export interface RegistryEndpointOptions {
  readonly build: BuildInfo;
  /**
   * Extra sections filled by the process assembly, e.g. `{"router/http": <stack params>}`; read on
   * every request so they reflect the current state.
   */
  readonly sections?: () => Readonly<Record<string, unknown>>;
  readonly env?: NodeJS.ProcessEnv;
  readonly envFilter?: (name: string) => boolean;
}

/**
 * `/admin/registry.json`: what this process is made of — registered plugin kinds per family,
 * runtime versions and flags, selected environment variables (secrets redacted), the build, and
 * the sections the assembly adds.
 */
export function registryEndpoint(options: RegistryEndpointOptions): AdminEndpoint {
  const { build, sections = () => ({}), env = process.env, envFilter = defaultEnvFilter } = options;
  return {
    path: '/admin/registry.json',
    description: 'Plugin kinds, runtime, environment, build properties and per-router stack parameters.',
    handler: () =>
      jsonResponse(
        {
          registry: {
            kinds: Object.fromEntries(Object.keys(FAMILIES).map((f) => [f, kindsOf(f as Family)])),
            process: {
              versions: process.versions,
              execArgv: process.execArgv,
              platform: process.platform,
              arch: process.arch,
            },
            env: redactedEnv(env, envFilter),
            build,
            ...sections(),
          },
        },
        200,
        true,
      ),
  };
}
