/** How a test runs one of the CLIs in src/cli: under tsx in a checkout, or as the bundled .mjs inside the GPU kit. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

/** Node arguments that run src/cli/<name> (prepend process.execPath). */
export function cliArgs(name: string): string[] {
  const bundled = join(ROOT, 'src/cli', `${name}.mjs`);
  return existsSync(bundled) ? [bundled] : ['--import', 'tsx', join(ROOT, 'src/cli', `${name}.ts`)];
}
