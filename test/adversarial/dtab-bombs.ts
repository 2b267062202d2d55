// Dtabs built to make delegation explode, shared by the adversarial tests of every router, the
// admin delegator, the resolver and scripts/attack-soak. Each shape doubles (or more) the work of
// a naive delegator at every level, so `levels` 20 asks for ~2^20 expansions from a few hundred
// bytes; a bounded engine must refuse each quickly and cleanly.

export interface DtabBomb {
  /** The shape's name, for test titles. */
  readonly shape: string;
  /** The dtab, one dentry per `;`. */
  readonly dtab: string;
  /** The logical path that sets it off (bound against `dtab` alone). */
  readonly path: string;
}

type Rewrite = (next: string) => string;

/** Each level rewrites `/lN` to a tree over `/lN+1` that names it more than once. */
const SHAPES: Record<string, { rewrite: Rewrite; dentriesPerLevel: number }> = {
  // Two dentries for one prefix: Finagle tries both, so each level is an Alt of two.
  dentries: { rewrite: (n) => n, dentriesPerLevel: 2 },
  alternatives: { rewrite: (n) => `${n} | ${n}`, dentriesPerLevel: 1 },
  unions: { rewrite: (n) => `${n} & ${n}`, dentriesPerLevel: 1 },
  weights: { rewrite: (n) => `1*${n} & 2.5*${n}`, dentriesPerLevel: 1 },
  nested: { rewrite: (n) => `(${n} | ${n}) & (1*${n} & 3*(${n} | ${n}))`, dentriesPerLevel: 1 },
};

export const BOMB_SHAPES: readonly string[] = Object.keys(SHAPES);

/**
 * A dtab of `levels` levels in the given shape, ending at `/l<levels>` (bound to nothing, so a
 * naive engine explores every branch to its Neg end before answering).
 */
export function dtabBomb(shape: string, levels = 20, entry = '/svc/a'): DtabBomb {
  const s = SHAPES[shape];
  if (!s) throw new Error(`unknown bomb shape ${shape}`);
  const dentries: string[] = [`${entry}=>/l0`];
  for (let i = 0; i < levels; i++) {
    for (let k = 0; k < s.dentriesPerLevel; k++) dentries.push(`/l${i}=>${s.rewrite(`/l${i + 1}`)}`);
  }
  return { shape, dtab: dentries.join(';'), path: entry };
}

/** Every shape at `levels` levels. */
export function dtabBombs(levels = 20, entry = '/svc/a'): DtabBomb[] {
  return BOMB_SHAPES.map((shape) => dtabBomb(shape, levels, entry));
}

/**
 * A long dtab of one prefix (`count` dentries, each an alternative for `/svc/a`): no fan-out per
 * level, but a naive engine recurses once per dentry and overflows the stack.
 */
export function deepDtab(count = 8000, entry = '/svc/a'): DtabBomb {
  const dentries: string[] = [];
  for (let i = 0; i < count; i++) dentries.push(`${entry}=>/$/inet/127.0.0.1/${1 + (i % 60000)}`);
  return { shape: `deep-${count}`, dtab: dentries.join(';'), path: entry };
}

/** A chain of `count` distinct rewrites `/cN => /cN+1`: depth without fan-out. */
export function chainDtab(count = 5000, entry = '/svc/a'): DtabBomb {
  const dentries: string[] = [`${entry}=>/c0`];
  for (let i = 0; i < count; i++) dentries.push(`/c${i}=>/c${i + 1}`);
  return { shape: `chain-${count}`, dtab: dentries.join(';'), path: entry };
}
