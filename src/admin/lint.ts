import { errorMessage } from '../core/errors.js';
import { DuplicateLinterError } from './errors.js';
import { jsonResponse, negotiate, type AdminEndpoint } from './handler.js';

/** How bad a lint issue is. */
export type LintSeverity = 'error' | 'warning' | 'info';

export interface LintIssue {
  readonly severity: LintSeverity;
  readonly message: string;
}

export interface LintResult {
  readonly name: string;
  readonly issues: readonly LintIssue[];
}

/** A check over the running configuration (e.g. a dtab linter), run on every `/admin/lint` request. */
export interface Linter {
  readonly name: string;
  readonly description: string;
  run(): LintResult | Promise<LintResult>;
}

/** A linter's result together with its description, as the endpoints render it. */
export interface LintReport extends LintResult {
  readonly description: string;
}

/** The linters of a process. A linter that throws reports the failure as one `error` issue. */
export class LinterRegistry {
  readonly #linters = new Map<string, Linter>();

  /** Adds a linter; names are unique. */
  add(linter: Linter): this {
    if (this.#linters.has(linter.name)) throw new DuplicateLinterError(linter.name);
    this.#linters.set(linter.name, linter);
    return this;
  }

  /** Runs every linter, in name order. */
  async run(): Promise<LintReport[]> {
    const linters = [...this.#linters.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    return Promise.all(
      linters.map(async (linter): Promise<LintReport> => {
        try {
          const { issues } = await linter.run();
          return { name: linter.name, description: linter.description, issues };
        } catch (e) {
          const issue: LintIssue = { severity: 'error', message: `linter failed: ${errorMessage(e)}` };
          return { name: linter.name, description: linter.description, issues: [issue] };
        }
      }),
    );
  }
}

function renderText(reports: readonly LintReport[]): string {
  if (reports.length === 0) return 'no linters registered';
  const issueCount = reports.reduce((n, r) => n + r.issues.length, 0);
  const lines = [`${reports.length} linters run, ${issueCount} issues found`];
  for (const r of reports) {
    lines.push('', `${r.name}: ${r.issues.length === 0 ? 'OK' : `${r.issues.length} issues`}`, `  ${r.description}`);
    for (const issue of r.issues) lines.push(`  [${issue.severity.toUpperCase()}] ${issue.message}`);
  }
  return lines.join('\n');
}

/** `/admin/lint` (text, or JSON on request) and `/admin/lint.json`. */
export function lintEndpoints(linters: LinterRegistry): AdminEndpoint[] {
  const description = 'Results of all registered linters.';
  const json = (reports: readonly LintReport[]): unknown => ({
    issues: reports.reduce((n, r) => n + r.issues.length, 0),
    results: reports,
  });
  return [
    {
      path: '/admin/lint',
      description,
      handler: async (req) => {
        const reports = await linters.run();
        return negotiate(req, { text: () => renderText(reports), json: () => json(reports) });
      },
    },
    {
      path: '/admin/lint.json',
      description,
      handler: async () => jsonResponse(json(await linters.run())),
    },
  ];
}
