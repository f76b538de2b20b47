/**
 * The WGSL kernel library: sources come from kernels/*.wgsl (read from disk
 * in Node, bundled by Vite in the browser), pass through a small
 * preprocessor, and become cached compute pipelines.
 *
 * Preprocessor: `#include "name"` pastes kernels/name.wgsl; `#if FLAG`,
 * `#else`, `#endif` keep lines when FLAG is truthy in the defines; and
 * `{{NAME}}` is replaced by the define's value (for constants WGSL needs at
 * compile time, such as private array sizes).
 */
export type KernelSources = Record<string, string>;
export type Defines = Record<string, string | number | boolean>;

export function preprocess(name: string, sources: KernelSources, defines: Defines, depth = 0): string {
  const src = sources[name];
  if (src === undefined) throw new Error(`No WGSL kernel named "${name}"`);
  if (depth > 4) throw new Error(`#include nesting too deep at "${name}"`);
  const out: string[] = [];
  const stack: { active: boolean; taken: boolean }[] = [];
  const active = () => stack.every((s) => s.active);
  for (const line of src.split('\n')) {
    const d = line.trim();
    if (d.startsWith('#if ')) {
      const flag = d.slice(4).trim();
      const on = Boolean(defines[flag]);
      stack.push({ active: on, taken: on });
    } else if (d === '#else') {
      const top = stack[stack.length - 1];
      if (!top) throw new Error(`${name}: #else without #if`);
      top.active = !top.taken;
      top.taken = true;
    } else if (d === '#endif') {
      if (!stack.pop()) throw new Error(`${name}: #endif without #if`);
    } else if (!active()) {
      continue;
    } else if (d.startsWith('#include ')) {
      const inc = /^#include\s+"([\w-]+)"$/.exec(d);
      if (!inc) throw new Error(`${name}: malformed ${d}`);
      out.push(preprocess(inc[1], sources, defines, depth + 1));
    } else {
      out.push(
        line.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
          if (!(key in defines)) throw new Error(`${name}: define {{${key}}} is not set`);
          return String(defines[key]);
        }),
      );
    }
  }
  if (stack.length) throw new Error(`${name}: unterminated #if`);
  return out.join('\n');
}

export class KernelLibrary {
  /** The pipelines built so far, by kernel name, each with the defines it was built from (see pipeline). */
  private pipelines = new Map<string, { defines: Defines; pipe: GPUComputePipeline }[]>();

  constructor(
    readonly device: GPUDevice,
    private sources: KernelSources,
  ) {}

  pipeline(name: string, defines: Defines = {}): GPUComputePipeline {
    // Called for every dispatch: the defines are compared with those of the kernel's pipelines so far, entry by
    // entry, a quarter of the time it took to build a key string and look it up (a tenth of a decode step's host
    // time on lavapipe).
    let built = this.pipelines.get(name);
    if (built) for (const b of built) if (sameDefines(defines, b.defines)) return b.pipe;
    let key = name;
    for (const k in defines) key += `|${k}=${defines[k]}`;
    const code = preprocess(name, this.sources, defines);
    const module = this.device.createShaderModule({ code, label: name });
    const pipe = this.device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: key });
    if (!built) this.pipelines.set(name, (built = []));
    built.push({ defines: { ...defines }, pipe });
    return pipe;
  }

  /**
   * The pipeline of `name` for a launch whose defines `key` determines (the caller's promise: equal keys, equal
   * defines), built or found by `defines()` only the first time the key is seen: for launches made every decode
   * step, whose defines cost more to build and compare than a string key to look up.
   */
  keyed(name: string, key: string, defines: () => Defines): GPUComputePipeline {
    const k = `${name} ${key}`;
    let pipe = this.byKey.get(k);
    if (!pipe) this.byKey.set(k, (pipe = this.pipeline(name, defines())));
    return pipe;
  }
  private byKey = new Map<string, GPUComputePipeline>();

  /** Compilation messages for a kernel (used by tests to surface WGSL errors). */
  async check(name: string, defines: Defines = {}): Promise<string[]> {
    const module = this.device.createShaderModule({ code: preprocess(name, this.sources, defines) });
    const info = await module.getCompilationInfo();
    return info.messages.filter((m) => m.type === 'error').map((m) => `${name}:${m.lineNum}: ${m.message}`);
  }
}

/** Whether two sets of defines name the same keys with the same values (in any order; no value is undefined). */
function sameDefines(a: Defines, b: Defines): boolean {
  let n = 0;
  for (const k in a) {
    if (a[k] !== b[k]) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}
