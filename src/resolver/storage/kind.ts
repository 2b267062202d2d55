import type { z } from 'zod';
import { type KindDef, registerKind } from '../../config/registry.js';
import type { DtabStore, StorageContext } from './types.js';

/** Registers a storage kind (family `storage`): its schema with defaults and its factory. */
export function defineStorage<Cfg>(def: {
  kind: string;
  schema: z.ZodType<Cfg>;
  experimental?: boolean;
  create: (cfg: Cfg, ctx: StorageContext) => DtabStore;
}): KindDef<Cfg, StorageContext, DtabStore> {
  return registerKind({ family: 'storage', ...def });
}
