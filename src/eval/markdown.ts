/** A Markdown table from a header row and rows: the first column left-aligned, the others right (RESULTS.md's sections). */
export function mdTable(headers: string[], rows: (string | number)[][]): string {
  const out = [`| ${headers.join(' | ')} |`, `| ${headers.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`];
  for (const r of rows) out.push(`| ${r.join(' | ')} |`);
  return out.join('\n');
}
