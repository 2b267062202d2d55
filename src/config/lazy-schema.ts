// Config schemas that exist only while a config is being validated.
//
// Why: a zod schema is an object graph (the instance, its internals, a closure and a context per
// check). prx defines ~1,500 of them at module level, and module bindings live as long as the
// process: 1.4 MiB of heap held by every proxy and worker for a config it read once at start.
// A module-level schema is therefore written `lazySchema(() => z.strictObject({...}))`: a
// stand-in typed as the schema itself, which builds the schema on first use. The outermost
// `validate()` drops every built schema when it returns (see `releaseSchemas`), and the next use
// builds it again, so the laziness is invisible to callers except in memory.

/** One stand-in's state: how to build the schema, and the schema while it is built. */
class SchemaCell {
  readonly #build: () => object;
  #schema: object | undefined;

  constructor(build: () => object) {
    this.#build = build;
  }

  get schema(): object {
    if (this.#schema === undefined) {
      this.#schema = this.#build();
      built.push(this);
    }
    return this.#schema;
  }

  drop(): void {
    this.#schema = undefined;
  }
}

// Cells whose schema is currently built: what `releaseSchemas` drops.
const built: SchemaCell[] = [];

// Every operation on a stand-in is the built schema's. zod's methods then run with the stand-in
// as `this` and reach the schema through these traps; getters run on the schema itself. A
// descriptor is reported configurable because the cell, the proxy's target, has no such own
// property (zod defines `_zod` non-configurable, which a proxy may not report of a target that
// lacks it).
const forwarding: ProxyHandler<SchemaCell> = {
  get: (cell, key): unknown => Reflect.get(cell.schema, key),
  set: (cell, key, value) => Reflect.set(cell.schema, key, value),
  has: (cell, key) => Reflect.has(cell.schema, key),
  ownKeys: (cell) => Reflect.ownKeys(cell.schema),
  getOwnPropertyDescriptor: (cell, key) => {
    const descriptor = Reflect.getOwnPropertyDescriptor(cell.schema, key);
    return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
  },
  defineProperty: (cell, key, descriptor) => Reflect.defineProperty(cell.schema, key, descriptor),
  deleteProperty: (cell, key) => Reflect.deleteProperty(cell.schema, key),
  getPrototypeOf: (cell) => Reflect.getPrototypeOf(cell.schema),
};

/**
 * A schema built by `build` on first use, typed as that schema. Use it for every schema a module
 * defines at its top level (including inside a `define…Kind({schema: …})` call evaluated at
 * import): `test/config/lazy-schema.test.ts` fails if importing prx's modules builds one.
 */
export function lazySchema<S extends object>(build: () => S): S {
  return new Proxy(new SchemaCell(build), forwarding) as unknown as S;
}

/**
 * Drops every built lazy schema; each is built again on its next use. Called by the outermost
 * `validate()` as it returns, so a process keeps no schema once its config is read.
 */
export function releaseSchemas(): void {
  for (const cell of built) cell.drop();
  built.length = 0;
}

/** How many lazy schemas are built right now (for tests and diagnostics). */
export function builtSchemaCount(): number {
  return built.length;
}
