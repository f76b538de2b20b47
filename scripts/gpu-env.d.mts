export function gpuEnv(base?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
export function chromiumPath(): string;
export const CHROMIUM_ARGS: string[];
export const LAVAPIPE_ICD: string;
