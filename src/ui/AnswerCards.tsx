/** Answers, newest first and side by side: algorithm, streamed text, TTFT with its breakdown, recomputed tokens, decode speed. */
import { useStudio, type AnswerCard } from './studio-store';
import { useEffect, useRef } from 'react';
import { clearAnswers } from './ask-actions';
import { usePromptContext } from './prompt-context';

const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));

const STATUS: Record<AnswerCard['status'], string> = {
  compiling: 'compiling chunks…', linking: 'linking…', streaming: 'answering…', done: 'done', stopped: 'stopped', error: 'failed',
};

/** "1 token", or "12 tokens · 3.4 tok/s" (one token has no decode speed: it came with the prefill). */
export const decodeLine = (tokens: number, perS: number) =>
  tokens === 1 ? '1 token (no decode speed: it came with the prefill)' : `${tokens} tokens · ${perS.toFixed(1)} tok/s`;

function Card({ c }: { c: AnswerCard }) {
  const f = c.first;
  return (
    <article className="answer-card" data-testid="answer-card" aria-label={`Answer with ${c.algorithm}`}>
      <header className="row-between">
        <h3 className="algo">{c.algorithm}</h3>
        <span className={`badge ${c.status === 'done' ? 'ok' : c.status === 'error' ? 'bad' : ''}`}>{STATUS[c.status]}</span>
      </header>
      {c.error ? <p className="error-text">{c.error}</p> : <p className="answer-text" data-testid="answer-text">{c.text || (c.status === 'done' ? '(no text: the model stopped at once)' : '…')}</p>}
      {f && (
        <dl className="metrics">
          <dt>TTFT</dt>
          <dd data-testid="ttft">{ms(f.ttft.totalMs)} ms</dd>
          <dt>breakdown</dt>
          <dd>lookup {ms(f.ttft.lookupMs)} · load {ms(f.ttft.loadMs)} · recompute {ms(f.ttft.recomputeMs)} · first token {ms(f.ttft.firstTokenMs)} ms</dd>
          <dt>recomputed</dt>
          <dd data-testid="recomputed">{f.recomputed} of {f.promptTokens} tokens ({(100 * f.recomputedFraction).toFixed(1)}%)</dd>
          {c.decodeTokensPerS !== undefined && (
            <>
              <dt>decode</dt>
              <dd data-testid="decode">{decodeLine(c.tokens ?? 0, c.decodeTokensPerS)}</dd>
            </>
          )}
          {f.compiledOnDemand > 0 && (
            <>
              <dt>compiled first</dt>
              <dd>{f.compiledOnDemand} chunks in {ms(f.compileMs)} ms (not in the TTFT)</dd>
            </>
          )}
        </dl>
      )}
    </article>
  );
}

export function AnswerCards() {
  const answers = useStudio((s) => s.answers);
  const ctx = usePromptContext();
  const box = useRef<HTMLElement>(null);
  const newest = answers[0]?.group;
  // A new question's answers are brought into view (they sit below the documents).
  useEffect(() => {
    if (newest !== undefined) box.current?.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  }, [newest]);
  if (!answers.length) return null;
  const current = answers.filter((a) => a.group === newest).reverse();
  const older = answers.filter((a) => a.group !== newest);
  return (
    <section className="panel answers" id="answers" ref={box} aria-labelledby="answers-title">
      <div className="row-between">
        <h2 id="answers-title">Answers</h2>
        <button className="small-btn" onClick={clearAnswers}>Clear answers</button>
      </div>
      <p className="muted small">Question: <q>{current[0]?.question.trim()}</q> over {current[0]?.chunkLabels.join(' → ')}</p>
      {current[0] && current[0].context !== ctx && (
        <p className="notice small" data-testid="answers-stale">
          These answers are from before: the model, the question or the chunks in the composer have changed since. Ask again for the current ones.
        </p>
      )}
      <div className="answer-grid" data-testid="answers-latest">
        {current.map((c) => <Card key={c.id} c={c} />)}
      </div>
      {older.length > 0 && (
        <details>
          <summary>Earlier answers ({older.length})</summary>
          <div className="answer-grid">{older.map((c) => <Card key={c.id} c={c} />)}</div>
        </details>
      )}
    </section>
  );
}
