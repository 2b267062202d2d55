import { PrxError } from '../core/errors.js';

/** A router lists a transformer kind nobody registered (config validation normally catches it). */
export class UnknownTransformerError extends PrxError {
  constructor(kind: string) {
    super('PRX_ERR_TRANSFORMER_UNKNOWN', `unknown transformer kind '${kind}'`);
  }
}

/** A transformer could not resolve the host whose addresses it keeps. */
export class TransformerHostLookupError extends PrxError {
  constructor(kind: string, host: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super('PRX_ERR_TRANSFORMER_HOST_LOOKUP', `${kind}: cannot resolve host '${host}': ${reason}`, { cause });
  }
}

/** `io.prx.orch.localnode` lacks the environment variable that says which node it is on (or it is malformed). */
export class LocalnodeEnvError extends PrxError {
  /** The reason alone, for a config issue that names the key path itself. */
  readonly reason: string;
  constructor(reason: string) {
    super('PRX_ERR_TRANSFORMER_LOCALNODE_ENV', `io.prx.orch.localnode: ${reason}`);
    this.reason = reason;
  }
}

/** `io.prx.orch.daemonset` could not read its daemon set's endpoints before it ever had them. */
export class DaemonsetUnavailableError extends PrxError {
  constructor(namespace: string, service: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super('PRX_ERR_TRANSFORMER_DAEMONSET_UNAVAILABLE', `io.prx.orch.daemonset: cannot read the endpoints of ${namespace}/${service}: ${reason}`, { cause });
  }
}

/** The dtab file of an `io.prx.fs` interpreter does not parse. */
export class DtabFileError extends PrxError {
  constructor(file: string, reason: string) {
    super('PRX_ERR_INTERPRETER_DTAB_FILE', `dtab file ${file}: ${reason}`);
  }
}

/** The dtab in an `io.prx.orch.configMap` interpreter's ConfigMap key does not parse. */
export class ConfigMapDtabError extends PrxError {
  constructor(configMap: string, key: string, reason: string) {
    super('PRX_ERR_INTERPRETER_CONFIGMAP_DTAB', `config map ${configMap} key ${key}: ${reason}`);
  }
}

/** The resolver answered a watch with an error (a status other than 200, or an error line). */
export class ResolverHttpError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_RESOLVER_HTTP', message);
  }
}

/** The resolver's `dst` path does not bind to an address to connect to. */
export class ResolverDstError extends PrxError {
  constructor(dst: string, what: string) {
    super('PRX_ERR_RESOLVER_DST', `resolver dst ${dst} ${what}`);
  }
}

/** The resolver's mesh interface ended a watch, refused it, or sent a message that does not fit. */
export class ResolverMeshError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_RESOLVER_MESH', message);
  }
}

/** The resolver's thrift name interface refused a watch (a Bind/Addr/DtabFailure) or answered with something that does not fit. */
export class ResolverThriftError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_RESOLVER_THRIFT', message);
  }
}
