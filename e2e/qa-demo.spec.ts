/**
 * The bundled document-QA model (public/models/qa-demo, a Hugging Face folder
 * served with the app) in the real page: it loads through the worker's
 * safetensors and transformers.js tokenizer path; its sample documents (a
 * made-up world from train/data.py) are added with its question framing,
 * compiled, reordered and linked, and it answers with LegoLink; the attention
 * map works with its 6 layers and 4 heads (the default head setting is clamped
 * to the model's last head). The guided demo's first step then loads its own
 * model (SmolLM2-135M-Instruct where it was fetched, else stories260K).
 */
import { expect, test } from '@playwright/test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

test('qa-demo, the default, loads from the bundled folder, adds its sample documents and answers over linked chunks', async ({ page }) => {
  // The default model: the page loads it with no ?model= at all.
  await page.goto('/');
  await expect(page.getByTestId('model-ready')).toContainText('qa-demo (bundled)');
  // Its sample documents (one chunk each), all in the composer, and its example question in its framing.
  await page.getByRole('button', { name: 'Add sample documents for qa-demo' }).click();
  await expect(page.getByTestId('document')).toHaveCount(5);
  await expect(page.getByTestId('composer-item')).toHaveCount(5);
  await expect(page.getByLabel('Question', { exact: true })).toHaveValue('Who is the mayor of the city where Brefau Lu lives?');
  await expect(page.getByLabel('Question framing')).toHaveValue('Question: {question}\nAnswer:');
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  await expect(page.getByTestId('compile-progress')).toContainText('Compiled 5 of 5 chunks');
  // Reordered: the last document moves up one place, before Malaith Jouka's; any order links.
  await page.getByRole('button', { name: 'Move Blou Floberg · 1 up' }).click();
  await page.getByLabel('Question', { exact: true }).fill('In what year was Brefau Lu born?');
  await page.getByLabel('Answer tokens').fill('8');
  await page.getByLabel('Linking algorithm').selectOption('legolink');
  await page.getByRole('button', { name: 'Ask (legolink:16)' }).click();
  const card = page.getByTestId('answer-card').filter({ has: page.getByRole('heading', { name: 'legolink:16' }) }).first();
  await expect(card).toContainText('done');
  // The card group names the question as typed (the framing is the model's business) and the new order.
  await expect(page.getByText(/^Question: In what year was Brefau Lu born\? over Dekuvik · 1 → .* → Blou Floberg · 1 → Malaith Jouka · 1$/)).toBeVisible();
  await expect(card.getByTestId('ttft')).toHaveText(/^\d+(\.\d)? ms$/);
  await expect(card.getByTestId('answer-text')).not.toHaveText(/^(…)?$/);
  await expect(page.getByLabel('Head', { exact: true })).toHaveValue('3');
  // The map's rows are the framed question: "Question:" is among them.
  await expect(page.getByTestId('attention-canvas').first()).toHaveAttribute('aria-label', /head 3/);
  await page.screenshot({ path: 'test-results/screens/qa-demo.png', fullPage: true });

  // The attention-sink demo runs on SmolLM2-135M-Instruct where it was fetched, else on stories260K: its first
  // step loads that model in place of this one.
  const smol = existsSync(join(import.meta.dirname, '../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf'));
  await page.getByRole('button', { name: 'Run step 1' }).click();
  await expect(page.getByRole('button', { name: 'Again step 1' })).toBeVisible({ timeout: 180_000 });
  await expect(page.getByTestId('model-ready')).toContainText(smol ? 'smollm2-135m-instruct (bundled)' : 'stories260K (bundled)');
  await expect(page.getByTestId('document')).toHaveCount(8);
  await expect(page.getByLabel('Question framing')).toHaveValue(smol ? /^\n\nAnswer the question using the text above/ : '{question}');
});
