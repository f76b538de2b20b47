/**
 * Numbers measured for one model and prompt are shown only while that model
 * and prompt are the current ones: the attention maps, their sink shares and
 * the demo's sink map (per prompt), and besides them the answers, their TTFT
 * chart and the TTFT sweep (per model). A change of model, of a chunk in the
 * composer, of the question or of its framing clears what no longer holds;
 * a model change also replaces a question that was the previous model's.
 */
import { useEffect, useRef } from 'react';
import { promptFor, useApp } from './store';
import { framingFor, promptContext, studio, useStudio, type StudioState } from './studio-store';

/** The current prompt's context, outside React (ask-actions stamps what it measures with it). */
export function currentContext(): string {
  const app = useApp.getState();
  const s = studio();
  return promptContext(s, app.model?.cacheKey, framingFor(s.settings, app.model?.id, app.bundled));
}

/** The current prompt's context, as a hook. */
export function usePromptContext(): string {
  const modelKey = useApp((a) => a.model?.cacheKey);
  const modelId = useApp((a) => a.model?.id);
  const bundled = useApp((a) => a.bundled);
  const docs = useStudio((s) => s.docs);
  const splits = useStudio((s) => s.splits);
  const composer = useStudio((s) => s.composer);
  const settings = useStudio((s) => s.settings);
  return promptContext({ docs, splits, composer, settings }, modelKey, framingFor(settings, modelId, bundled));
}

/** The maps and the sink map when they belong to the current prompt; none otherwise (even before they are cleared). */
export function useCurrentMeasures(): Pick<StudioState, 'maps' | 'sinkGrid'> {
  const ctx = usePromptContext();
  const mapsContext = useStudio((s) => s.mapsContext);
  const maps = useStudio((s) => s.maps);
  const sinkGrid = useStudio((s) => s.sinkGrid);
  return mapsContext === ctx ? { maps, sinkGrid } : { maps: {}, sinkGrid: null };
}

/** Clears what a change of model or prompt left behind (mounted once, by App). */
export function useClearStale() {
  const ctx = usePromptContext();
  const modelKey = useApp((a) => a.model?.cacheKey);
  const modelId = useApp((a) => a.model?.id);
  const lastModel = useRef<string | undefined>(undefined);
  useEffect(() => {
    const s = studio();
    if (s.mapsContext !== null && s.mapsContext !== ctx) s.set({ maps: {}, sinkGrid: null, mapsContext: null });
  }, [ctx]);
  useEffect(() => {
    // A failed load leaves the previous model: only another loaded model clears the answers and the sweep.
    if (!modelKey) return;
    if (lastModel.current !== undefined && lastModel.current !== modelKey) {
      studio().set({ answers: [], sweep: { points: [], done: 0, total: 0 }, composerNote: null });
      replaceModelQuestion(modelId);
    }
    lastModel.current = modelKey;
  }, [modelKey, modelId]);
}

/**
 * After a model change: a question the previous model's samples or demo put in the box is replaced by the new
 * model's example (or emptied), and the composer says so; a question the user typed stays.
 */
function replaceModelQuestion(modelId: string | undefined) {
  const s = studio();
  const was = s.settings.questionFor;
  if (!was || !modelId || was === modelId || !s.settings.question.trim()) return;
  const example = promptFor(useApp.getState().bundled, modelId)?.example;
  s.set((x) => ({
    settings: { ...x.settings, question: example ?? '', questionFor: example ? modelId : undefined },
    composerNote: example ? `The question was ${was}'s example; it is now ${modelId}'s.` : `The question was ${was}'s example and was cleared: type one for ${modelId}.`,
  }));
}
