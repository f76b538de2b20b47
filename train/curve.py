"""train/logs/curve.svg: the training curve the model card shows (loss and answer-token loss against
tokens seen, dev F1 on a second axis), drawn as plain SVG so the card needs no plotting package."""
from __future__ import annotations


def smooth(xs, k=25):
    out, acc = [], []
    for x in xs:
        acc.append(x)
        if len(acc) > k:
            acc.pop(0)
        out.append(sum(acc) / len(acc))
    return out


def svg_chart(train, dev, path):
    """Loss (smoothed, left axis) and dev F1 (right axis) against tokens seen."""
    W, H, L, R, T, B = 720, 360, 60, 60, 30, 50
    toks = [int(r['tokens']) for r in train]
    loss = smooth([float(r['loss']) for r in train])
    ans = smooth([float(r['answer_loss']) for r in train if r['answer_loss'] != 'nan'] or [0.0])
    ans_t = [int(r['tokens']) for r in train if r['answer_loss'] != 'nan']
    xmax = max(toks)
    ymax = max(max(loss[5:] or loss), max(ans[5:] or ans))
    ymax = min(ymax, 8.0)
    X = lambda t: L + (W - L - R) * t / xmax  # noqa: E731
    Y = lambda v: T + (H - T - B) * (1 - min(v, ymax) / ymax)  # noqa: E731
    Y2 = lambda f: T + (H - T - B) * (1 - f)  # noqa: E731
    poly = lambda xs, ys: ' '.join(f'{X(x):.1f},{Y(y):.1f}' for x, y in zip(xs, ys))  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" '
             f'font-size="12"><rect width="{W}" height="{H}" fill="white"/>']
    for i in range(6):
        v = ymax * i / 5
        parts.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#eee"/>'
                     f'<text x="{L - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>'
                     f'<text x="{W - R + 6}" y="{Y2(i / 5) + 4:.1f}">{i / 5:.1f}</text>')
    for i in range(6):
        t = xmax * i / 5
        parts.append(f'<text x="{X(t):.1f}" y="{H - B + 18}" text-anchor="middle">{t / 1e6:.1f}M</text>')
    parts.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">tokens seen</text>')
    parts.append(f'<text x="14" y="{T + (H - T - B) / 2}" transform="rotate(-90 14 {T + (H - T - B) / 2})" '
                 f'text-anchor="middle">loss (nats/token)</text>')
    parts.append(f'<text x="{W - 12}" y="{T + (H - T - B) / 2}" transform="rotate(90 {W - 12} '
                 f'{T + (H - T - B) / 2})" text-anchor="middle">dev F1</text>')
    parts.append(f'<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="{poly(toks, loss)}"/>')
    parts.append(f'<polyline fill="none" stroke="#ff7f0e" stroke-width="1.5" points="{poly(ans_t, ans)}"/>')
    if dev:
        pts = ' '.join(f'{X(int(r["tokens"])):.1f},{Y2(float(r["dev_f1"])):.1f}' for r in dev)
        parts.append(f'<polyline fill="none" stroke="#2ca02c" stroke-width="1.5" points="{pts}"/>')
        for r in dev:
            parts.append(f'<circle cx="{X(int(r["tokens"])):.1f}" cy="{Y2(float(r["dev_f1"])):.1f}" r="3" '
                         f'fill="#2ca02c"/>')
    lx = L + 10
    for i, (c, name) in enumerate([('#1f77b4', 'training loss (weighted, 25-step mean)'),
                                   ('#ff7f0e', 'answer-token loss (25-step mean)'),
                                   ('#2ca02c', 'dev F1, greedy (right axis)')]):
        parts.append(f'<line x1="{lx}" x2="{lx + 20}" y1="{T + 10 + 16 * i}" y2="{T + 10 + 16 * i}" '
                     f'stroke="{c}" stroke-width="2"/><text x="{lx + 26}" y="{T + 14 + 16 * i}">{name}</text>')
    parts.append(f'<line x1="{L}" x2="{L}" y1="{T}" y2="{H - B}" stroke="#333"/>'
                 f'<line x1="{L}" x2="{W - R}" y1="{H - B}" y2="{H - B}" stroke="#333"/>'
                 f'<line x1="{W - R}" x2="{W - R}" y1="{T}" y2="{H - B}" stroke="#333"/></svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(parts) + '\n')
