/**
 * The bundled document-QA model (public/models/qa-demo, a Hugging Face folder
 * served with the app) in the real page: it loads through the worker's
 * safetensors and transformers.js tokenizer path, two pasted documents in its
 * world are split, compiled and linked, and it answers with LegoLink; the
 * attention map works with its 6 layers and 6 heads.
 */
import { expect, test } from '@playwright/test';

const DOCS = [
  ['alpha', 'Title: Brenna Tolvik\nBrenna Tolvik works as a baker. Brenna Tolvik lives in Drunavik. Brenna Tolvik was born in 1984.\n\n'],
  ['beta', 'Title: Drunavik\nDrunavik is a city in Osmeria. The mayor of Drunavik is Pell Odrasa. About 52,000 people live in Drunavik.\n\n'],
];

test('qa-demo loads from the bundled folder and answers over linked chunks', async ({ page }) => {
  await page.goto('/?model=qa-demo');
  await expect(page.getByTestId('model-ready')).toContainText('qa-demo (bundled)');
  await page.getByText('Paste text').click();
  for (const [name, text] of DOCS) {
    await page.getByLabel('Name of the pasted document').fill(name);
    await page.getByLabel('Pasted document text').fill(text);
    await page.getByRole('button', { name: 'Add pasted text' }).click();
  }
  await expect(page.getByTestId('document')).toHaveCount(2);
  for (const [name] of DOCS) {
    const doc = page.getByTestId('document').filter({ hasText: name });
    await doc.getByLabel(`Split mode (${name})`).selectOption('document');
    await expect(doc.getByTestId('chunk')).toHaveCount(1);
  }
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  await expect(page.getByTestId('compile-progress')).toContainText('Compiled 2 of 2 chunks');
  // Linked in the order beta (the city), alpha (the person): any order works.
  for (const name of ['beta', 'alpha']) await page.getByRole('button', { name: `Add ${name} · 1 to the composer` }).click();
  await expect(page.getByTestId('composer-item')).toHaveCount(2);
  await page.getByLabel('Question').fill('Question: Where does Brenna Tolvik live?\nAnswer:');
  await page.getByLabel('Answer tokens').fill('8');
  await page.getByLabel('Linking algorithm').selectOption('legolink');
  await page.getByRole('button', { name: 'Ask (legolink:16)' }).click();
  const card = page.getByTestId('answer-card').filter({ has: page.getByRole('heading', { name: 'legolink:16' }) }).first();
  await expect(card).toContainText('done');
  await expect(card.getByTestId('ttft')).toHaveText(/^\d+(\.\d)? ms$/);
  await expect(card.getByTestId('answer-text')).not.toHaveText(/^(…)?$/);
  await expect(page.getByLabel('Head', { exact: true })).toHaveValue('5');
  await expect(page.getByTestId('attention-canvas').first()).toHaveAttribute('aria-label', /head 5/);
  await page.screenshot({ path: 'test-results/screens/qa-demo.png', fullPage: true });
});
