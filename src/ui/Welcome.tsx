/**
 * The first screen's sentence and its two starts: ask about your own
 * documents (with the best model the page offers for them, loaded on the
 * way), or see attention sinks in the guided demo.
 */
import { useModelRoles } from './ModelRoles';
import { loadBundled } from './actions';

/** Scrolls to a section and moves the keyboard focus into it. */
function goTo(id: string, focus: string) {
  document.getElementById(id)?.scrollIntoView({ block: 'start' });
  document.querySelector<HTMLElement>(focus)?.focus({ preventScroll: true });
}

export function Welcome() {
  const { model, loading, busy, own } = useModelRoles();
  const best = own?.id ?? model?.id;

  function askDocuments() {
    if (own && model?.id !== own.id && !loading && !busy) void loadBundled(own);
    goTo('documents', '#documents input[type=file]');
  }

  return (
    <div className="welcome" data-testid="welcome">
      <p className="lead">
        Ask a small language model about your documents, here in the browser on your GPU: each document is cut into chunks whose KV caches are
        computed once and kept, then linked in any order when you ask.
      </p>
      <div className="row starts">
        <button className="primary" onClick={askDocuments}>Ask about your documents{best ? ` (with ${best})` : ''}</button>
        <button onClick={() => goTo('demo', '#demo button')}>See attention sinks (guided demo)</button>
      </div>
    </div>
  );
}
