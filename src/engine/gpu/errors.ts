/** How GPU work fails, as callers tell it apart: the device is gone, or WebGPU rejected the engine's work. */

/** The device is gone (driver reset, GPU removed, or destroyed); a new one must be created. */
export class DeviceLostError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeviceLostError';
  }
}

/**
 * WebGPU rejected work the engine recorded (a validation error): a bug in LegoKV. The command it names did not run,
 * so whatever was computed since the previous check cannot be trusted, and is not returned.
 */
export class GpuValidationError extends Error {
  constructor(message: string) {
    super(`WebGPU rejected the engine's work, so its result was discarded (a bug in LegoKV; please report it): ${message}`);
    this.name = 'GpuValidationError';
  }
}
