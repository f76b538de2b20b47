/** Shown instead of the app when there is no usable WebGPU adapter. */
export function NoWebGPU({ title, message }: { title: string; message: string }) {
  return (
    <main className="page">
      <h1>LegoKV</h1>
      <section role="alert" className="fatal" data-testid="no-webgpu">
        <h2>{title}</h2>
        <p>{message}</p>
        <p>LegoKV runs the model on your GPU through WebGPU. To enable it:</p>
        <ul>
          <li>Use a recent Chrome or Edge (version 113 or later) on Windows, macOS or ChromeOS.</li>
          <li>On Linux, open chrome://flags/#enable-unsafe-webgpu and enable it, or start Chrome with --enable-unsafe-webgpu.</li>
          <li>Check chrome://gpu: "WebGPU" should read "Hardware accelerated". A blocklisted driver can be overridden with chrome://flags/#ignore-gpu-blocklist.</li>
        </ul>
      </section>
    </main>
  );
}
