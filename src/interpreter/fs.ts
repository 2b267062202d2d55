import { statSync } from 'node:fs';
import { z } from 'zod';
import { addIssue, filePath, interpreterShape, lazySchema } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import type { Activity, Dtab, MountedNamer, NameInterpreter, Namer } from '../naming/index.js';
import type { Logger } from '../core/log.js';
import type { InterpreterContext } from './context.js';
import { type DtabFileStatus, WatchedDtabFile } from './dtab-file.js';
import { LiveDtabInterpreter } from './live-dtab.js';
import { buildTransformers, withTransformers } from './transformer.js';
import './transformers/index.js';

/**
 * `io.prx.fs`: the default interpreter with a dtab read from `dtabFile` and watched, so edits
 * apply live (see `WatchedDtabFile` for malformed edits and a deleted file). As in Linkerd's
 * `ConfiguredDtabNamer`, a name binds through the file's dtab followed by the dtab the router
 * passes (its own `dtab` plus the request's local dtab), so router and request dentries win.
 *
 * ```yaml
 * interpreter:
 *   kind: io.prx.fs
 *   dtabFile: /etc/prx/dtab
 * ```
 */
export const fsInterpreterSchema = lazySchema(() => z.strictObject({
  ...interpreterShape('io.prx.fs'),
  dtabFile: filePath.superRefine((file, ctx) => {
    let isFile = false;
    try {
      isFile = statSync(file).isFile();
    } catch {
      // Reported below: a missing file and an unreadable path read the same to an operator.
    }
    if (!isFile) addIssue(ctx, [], 'file does not exist', { value: file });
  }),
}));
export type FsInterpreterConfig = z.output<typeof fsInterpreterSchema>;

export class FsDtabInterpreter extends LiveDtabInterpreter<DtabFileStatus> {
  readonly dtabFile: WatchedDtabFile;

  constructor(dtabFile: string, namers: readonly MountedNamer[], system: Namer, log?: Logger) {
    super(namers, system);
    this.dtabFile = new WatchedDtabFile(dtabFile, log);
  }

  get dtab(): Activity<Dtab> {
    return this.dtabFile.dtab;
  }

  state(): DtabFileStatus {
    return this.dtabFile.status();
  }
}

registerKind({
  family: 'interpreter',
  kind: 'io.prx.fs',
  schema: fsInterpreterSchema,
  create: (cfg: FsInterpreterConfig, ctx: InterpreterContext): NameInterpreter =>
    withTransformers(new FsDtabInterpreter(cfg.dtabFile, ctx.namers, ctx.system, ctx.log), buildTransformers(cfg.transformers, ctx)),
});
