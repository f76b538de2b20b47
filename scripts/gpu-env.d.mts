export function gpuEnv(base?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
