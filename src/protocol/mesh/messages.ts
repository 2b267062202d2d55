import protobuf from 'protobufjs';
import { MESH_DESCRIPTOR } from './descriptor.js';

// The message types of the mesh API (package io.linkerd.mesh) and of the destination API, built
// once from the generated descriptor. This module is only reached through dynamic imports (the
// resolver's gRPC interfaces, the proxy's mesh interpreter), so a process that uses none of them
// never loads protobufjs.

const root = protobuf.Root.fromJSON(MESH_DESCRIPTOR as unknown as protobuf.INamespace);
const type = (name: string): protobuf.Type => root.lookupType(`io.linkerd.mesh.${name}`);

export const MeshTypes = {
  BindReq: type('BindReq'),
  BoundTreeRsp: type('BoundTreeRsp'),
  ReplicasReq: type('ReplicasReq'),
  Replicas: type('Replicas'),
  DtabReq: type('DtabReq'),
  DtabRsp: type('DtabRsp'),
  DelegateTreeReq: type('DelegateTreeReq'),
  DelegateTreeRsp: type('DelegateTreeRsp'),
  // The destination API of second-generation proxies (`io.prx.destination`).
  GetDestination: root.lookupType('io.linkerd.proxy.destination.GetDestination'),
  Update: root.lookupType('io.linkerd.proxy.destination.Update'),
  DestinationProfile: root.lookupType('io.linkerd.proxy.destination.DestinationProfile'),
} as const;
export type MeshTypeName = keyof typeof MeshTypes;

/** One RPC of the mesh API: its gRPC path, request and response types, and whether it streams. */
export interface MeshMethod {
  readonly service: 'Interpreter' | 'Resolver' | 'Delegator';
  readonly name: string;
  readonly path: string;
  readonly request: MeshTypeName;
  readonly response: MeshTypeName;
  readonly streaming: boolean;
}

function method(service: MeshMethod['service'], name: string, request: MeshTypeName, response: MeshTypeName, streaming: boolean): MeshMethod {
  return { service, name, path: `/io.linkerd.mesh.${service}/${name}`, request, response, streaming };
}

/** Every method prx serves (the stateless Codec service is not among them). */
export const MESH_METHODS = {
  GetBoundTree: method('Interpreter', 'GetBoundTree', 'BindReq', 'BoundTreeRsp', false),
  StreamBoundTree: method('Interpreter', 'StreamBoundTree', 'BindReq', 'BoundTreeRsp', true),
  GetReplicas: method('Resolver', 'GetReplicas', 'ReplicasReq', 'Replicas', false),
  StreamReplicas: method('Resolver', 'StreamReplicas', 'ReplicasReq', 'Replicas', true),
  GetDtab: method('Delegator', 'GetDtab', 'DtabReq', 'DtabRsp', false),
  StreamDtab: method('Delegator', 'StreamDtab', 'DtabReq', 'DtabRsp', true),
  GetDelegateTree: method('Delegator', 'GetDelegateTree', 'DelegateTreeReq', 'DelegateTreeRsp', false),
  StreamDelegateTree: method('Delegator', 'StreamDelegateTree', 'DelegateTreeReq', 'DelegateTreeRsp', true),
} as const satisfies Record<string, MeshMethod>;
export type MeshMethodName = keyof typeof MESH_METHODS;

/** Encodes a plain object of message `name` (fields named as in the .proto files). */
export function encodeMessage(name: MeshTypeName, value: object): Buffer {
  const bytes = MeshTypes[name].encode(value).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Decodes message `name`; throws on malformed protobuf. Unset message fields read as null. */
export function decodeMessage<T>(name: MeshTypeName, bytes: Uint8Array): T {
  return MeshTypes[name].decode(bytes) as unknown as T;
}
