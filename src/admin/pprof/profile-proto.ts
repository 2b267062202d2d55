import protobuf from 'protobufjs';

/**
 * The pprof wire format (`perftools.profiles.Profile`, google/pprof `proto/profile.proto`) as a
 * protobufjs reflection definition. Field names are camel-cased as protobufjs does; only ids and
 * types reach the wire. Repeated numeric fields are packed, as proto3 would encode them.
 */
const packed = { packed: true };

const PROFILE_PROTO = {
  nested: {
    perftools: {
      nested: {
        profiles: {
          nested: {
            Profile: {
              fields: {
                sampleType: { rule: 'repeated', type: 'ValueType', id: 1 },
                sample: { rule: 'repeated', type: 'Sample', id: 2 },
                mapping: { rule: 'repeated', type: 'Mapping', id: 3 },
                location: { rule: 'repeated', type: 'Location', id: 4 },
                function: { rule: 'repeated', type: 'Function', id: 5 },
                stringTable: { rule: 'repeated', type: 'string', id: 6 },
                dropFrames: { type: 'int64', id: 7 },
                keepFrames: { type: 'int64', id: 8 },
                timeNanos: { type: 'int64', id: 9 },
                durationNanos: { type: 'int64', id: 10 },
                periodType: { type: 'ValueType', id: 11 },
                period: { type: 'int64', id: 12 },
                comment: { rule: 'repeated', type: 'int64', id: 13, options: packed },
                defaultSampleType: { type: 'int64', id: 14 },
              },
            },
            ValueType: {
              fields: {
                type: { type: 'int64', id: 1 },
                unit: { type: 'int64', id: 2 },
              },
            },
            Sample: {
              fields: {
                locationId: { rule: 'repeated', type: 'uint64', id: 1, options: packed },
                value: { rule: 'repeated', type: 'int64', id: 2, options: packed },
                label: { rule: 'repeated', type: 'Label', id: 3 },
              },
            },
            Label: {
              fields: {
                key: { type: 'int64', id: 1 },
                str: { type: 'int64', id: 2 },
                num: { type: 'int64', id: 3 },
                numUnit: { type: 'int64', id: 4 },
              },
            },
            Mapping: {
              fields: {
                id: { type: 'uint64', id: 1 },
                memoryStart: { type: 'uint64', id: 2 },
                memoryLimit: { type: 'uint64', id: 3 },
                fileOffset: { type: 'uint64', id: 4 },
                filename: { type: 'int64', id: 5 },
                buildId: { type: 'int64', id: 6 },
                hasFunctions: { type: 'bool', id: 7 },
                hasFilenames: { type: 'bool', id: 8 },
                hasLineNumbers: { type: 'bool', id: 9 },
                hasInlineFrames: { type: 'bool', id: 10 },
              },
            },
            Location: {
              fields: {
                id: { type: 'uint64', id: 1 },
                mappingId: { type: 'uint64', id: 2 },
                address: { type: 'uint64', id: 3 },
                line: { rule: 'repeated', type: 'Line', id: 4 },
                isFolded: { type: 'bool', id: 5 },
              },
            },
            Line: {
              fields: {
                functionId: { type: 'uint64', id: 1 },
                line: { type: 'int64', id: 2 },
                column: { type: 'int64', id: 3 },
              },
            },
            Function: {
              fields: {
                id: { type: 'uint64', id: 1 },
                name: { type: 'int64', id: 2 },
                systemName: { type: 'int64', id: 3 },
                filename: { type: 'int64', id: 4 },
                startLine: { type: 'int64', id: 5 },
              },
            },
          },
        },
      },
    },
  },
};

/** The `perftools.profiles.Profile` message type (encode/decode). */
export const ProfileMessage: protobuf.Type = protobuf.Root.fromJSON(PROFILE_PROTO).lookupType(
  'perftools.profiles.Profile',
);

/**
 * A 64-bit field value: a number when it fits in a double exactly, else its decimal string
 * (protobufjs encodes both).
 */
export type Int64 = number | string;

/** The subset of the message prx writes (string fields are indices into `stringTable`). */
export interface PprofProfile {
  readonly sampleType: readonly PprofValueType[];
  readonly sample: readonly PprofSample[];
  readonly location: readonly PprofLocation[];
  readonly function: readonly PprofFunction[];
  readonly stringTable: readonly string[];
  readonly timeNanos: Int64;
  readonly durationNanos: Int64;
  readonly periodType: PprofValueType;
  readonly period: Int64;
  readonly comment: readonly number[];
  readonly defaultSampleType: number;
}

export interface PprofValueType {
  readonly type: number;
  readonly unit: number;
}

export interface PprofSample {
  /** Leaf first. */
  readonly locationId: readonly number[];
  readonly value: readonly Int64[];
}

export interface PprofLocation {
  readonly id: number;
  readonly line: readonly { readonly functionId: number; readonly line: number; readonly column?: number }[];
}

export interface PprofFunction {
  readonly id: number;
  readonly name: number;
  readonly systemName: number;
  readonly filename: number;
  readonly startLine: number;
}

/** Serializes a profile (uncompressed; pprof files are gzipped on top, see `builder.ts`). */
export function encodeProfile(profile: PprofProfile): Uint8Array {
  return ProfileMessage.encode(profile).finish();
}
