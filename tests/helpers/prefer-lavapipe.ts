/**
 * For tests whose subject is a model's arithmetic, not the adapter: run this test file's engine on Mesa's lavapipe
 * where it is fetched (`npm test` fetches it), which runs the same kernels three to four times faster than
 * SwiftShader on this project's host; otherwise on the default adapter. A LEGOKV_NODE_BACKEND the process was given
 * stands. Call it before the first GPU is made: the backend is read when one is.
 */
import { existsSync } from 'node:fs';
import { LAVAPIPE_ICD } from '../../scripts/gpu-env.mjs';

export function preferLavapipe(): void {
  if (!process.env.LEGOKV_NODE_BACKEND && existsSync(LAVAPIPE_ICD)) process.env.LEGOKV_NODE_BACKEND = 'lavapipe';
}
