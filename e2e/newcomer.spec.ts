/**
 * The studio as a newcomer meets it (issue 37), each check small: files in
 * other encodings and files too large, answers that are easy to see, charts
 * whose exports are the charts, numbers that belong to the current model
 * and prompt, and a first screen that says what the page does.
 */
import { test, expect, type Page } from '@playwright/test';

async function ready(page: Page, model = 'stories260K') {
  await expect(page.getByTestId('model-ready')).toContainText(model);
}

/** Drops files built in the page (bytes, or a text repeated to a length) onto the documents' drop zone. */
async function dropBuilt(page: Page, files: { name: string; type: string; bytes?: number[]; repeat?: [string, number] }[]) {
  const dt = await page.evaluateHandle((fs) => {
    const dt = new DataTransfer();
    for (const f of fs) dt.items.add(new File([f.bytes ? new Uint8Array(f.bytes) : f.repeat![0].repeat(f.repeat![1])], f.name, { type: f.type }));
    return dt;
  }, files);
  await page.getByTestId('doc-dropzone').dispatchEvent('drop', { dataTransfer: dt });
}

/** Windows-1252 bytes of a French sentence: accents, curly quotes, a euro sign. */
const FRENCH = '\u201cÉlève à l\u2019école\u201d: été, hôtel, façade, naïve, où, déjà vu. Le café coûte 2 \u20ac.';
const CP1252: Record<string, number> = { '\u201c': 0x93, '\u201d': 0x94, '\u2019': 0x92, '\u20ac': 0x80 };
const frenchBytes = [...FRENCH].map((c) => CP1252[c] ?? c.charCodeAt(0));

test('a Windows-1252 file is read (and says so); a 50 MB file is refused by name, size, limit and the storage it would take', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await dropBuilt(page, [
    { name: 'eleve.txt', type: 'text/plain', bytes: frenchBytes },
    { name: 'big.txt', type: 'text/plain', repeat: ['Lily had a red kite and flew it every day. ', 1_219_275] },
  ]);
  const doc = page.getByTestId('document').filter({ hasText: 'eleve.txt' });
  await expect(doc.getByTestId('doc-encoding')).toHaveText(' · read as Windows-1252 (not UTF-8)');
  await expect(doc.locator('.chunk-text').first()).toContainText('\u201cÉlève à l\u2019école\u201d: été');
  expect((await doc.locator('.chunk-text').allTextContents()).join(' ').replace(/\s+/g, ' ')).toBe(FRENCH);
  const refusal = page.getByTestId('import-error');
  await expect(refusal).toHaveCount(1);
  await expect(refusal).toContainText('"big.txt" is too large: 52.4 MB, 52,428,825 characters, more than the limit of 5,000,000 characters a document may have.');
  await expect(refusal).toContainText(/5,000,000 characters are about [\d.]+ million tokens for stories260K, and their KV cache would take [\d.]+ GB of browser storage \(5 layers × \d+ values/);
  await expect(refusal).not.toContainText('maxDocumentChars');
  await expect(page.getByTestId('document')).toHaveCount(1);
});
