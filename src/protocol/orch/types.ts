// The orchestrator (Kubernetes) API objects prx reads: only the fields it uses, all optional past
// the name, since the API server may omit any of them and a test fake may be sparse.

export interface OrchObjectMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly resourceVersion?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface OrchObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: OrchObjectMeta;
}

/** Where a kind of object lives in the API: group `''` is the core group (`/api/v1`). */
export interface OrchResource {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
}

export const ENDPOINTS: OrchResource = { group: '', version: 'v1', plural: 'endpoints', kind: 'Endpoints' };
export const SERVICES: OrchResource = { group: '', version: 'v1', plural: 'services', kind: 'Service' };
export const PODS: OrchResource = { group: '', version: 'v1', plural: 'pods', kind: 'Pod' };
export const CONFIGMAPS: OrchResource = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap' };
export const INGRESSES: OrchResource = { group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', kind: 'Ingress' };

export interface EndpointAddress {
  readonly ip: string;
  readonly hostname?: string;
  readonly nodeName?: string;
  readonly targetRef?: { readonly kind?: string; readonly name?: string; readonly namespace?: string };
}

export interface EndpointPort {
  readonly name?: string;
  readonly port: number;
  readonly protocol?: string;
}

export interface EndpointSubset {
  readonly addresses?: readonly EndpointAddress[];
  readonly notReadyAddresses?: readonly EndpointAddress[];
  readonly ports?: readonly EndpointPort[];
}

export interface EndpointsObject extends OrchObject {
  readonly subsets?: readonly EndpointSubset[];
}

export interface ServicePort {
  readonly name?: string;
  readonly port: number;
  readonly targetPort?: number | string;
  readonly protocol?: string;
}

export interface ServiceObject extends OrchObject {
  readonly spec?: { readonly type?: string; readonly ports?: readonly ServicePort[]; readonly clusterIP?: string };
  readonly status?: { readonly loadBalancer?: { readonly ingress?: readonly { readonly ip?: string; readonly hostname?: string }[] } };
}

export interface PodObject extends OrchObject {
  readonly spec?: { readonly nodeName?: string; readonly hostNetwork?: boolean };
  readonly status?: { readonly podIP?: string; readonly hostIP?: string; readonly phase?: string };
}

export interface ConfigMapObject extends OrchObject {
  readonly data?: Readonly<Record<string, string>>;
}

export interface IngressBackend {
  readonly service?: { readonly name: string; readonly port?: { readonly name?: string; readonly number?: number } };
}

export interface IngressPath {
  readonly path?: string;
  readonly pathType?: 'Prefix' | 'Exact' | 'ImplementationSpecific';
  readonly backend: IngressBackend;
}

export interface IngressRule {
  readonly host?: string;
  readonly http?: { readonly paths: readonly IngressPath[] };
}

export interface IngressObject extends OrchObject {
  readonly spec?: {
    readonly ingressClassName?: string;
    readonly defaultBackend?: IngressBackend;
    readonly rules?: readonly IngressRule[];
  };
}

/** One event of a watch stream. */
export interface WatchEvent {
  /** ADDED, MODIFIED, DELETED, BOOKMARK or ERROR; anything else is ignored. */
  readonly type?: string;
  readonly object?: OrchObject & { readonly code?: number; readonly message?: string; readonly reason?: string };
}

/** The map key of an object: `namespace/name`. */
export function objectKey(o: OrchObject): string {
  return `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}
