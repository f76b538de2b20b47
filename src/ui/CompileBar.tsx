/** Compile every chunk of every document, with per-chunk progress and Cancel. */
import { useStudio } from './studio-store';
import { cancelCompile, compileAll } from './doc-actions';
import { useApp } from './store';
import { StudioError } from './StudioError';

export function CompileBar() {
  const docs = useStudio((s) => s.docs);
  const compile = useStudio((s) => s.compile);
  const busy = useStudio((s) => s.busy);
  const model = useApp((s) => s.model);
  const { compiled, reused } = compile;
  return (
    <div className="compile-bar">
      <div className="row">
        <button onClick={() => void compileAll()} disabled={!!busy || !docs.length || !model}>Compile all chunks</button>
        {compile.running && <button onClick={cancelCompile}>Cancel compiling</button>}
      </div>
      {(compile.running || compile.total > 0) && (
        <div className="row" role="status" data-testid="compile-progress">
          <progress aria-label="Compile progress" value={compile.done} max={compile.total || 1} />
          <span>
            {compile.running ? 'Compiling' : compile.cancelled ? 'Cancelled: compiled' : 'Compiled'} {compile.done.toLocaleString('en-US')} of {compile.total.toLocaleString('en-US')} chunks
            {compile.done > 0 ? ` (${compiled.toLocaleString('en-US')} new, ${reused.toLocaleString('en-US')} already stored)` : ''}
            {compile.cancelled ? '; the others are not compiled.' : ''}
          </span>
        </div>
      )}
      <StudioError at="documents" />
    </div>
  );
}
