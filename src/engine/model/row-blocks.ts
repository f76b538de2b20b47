/**
 * How a pass's rows are cut into blocks that each fit one binding of a layer's temporaries (ForwardPass): exact
 * when the positions never decrease and blocks are cut where the position rises, so a block's queries see the rows
 * of earlier blocks, already written in that layer, and none of later ones.
 */

/**
 * The pass's rows [a, b) in blocks of at most `maxRows`, cut only where the position rises. Throws when the rows
 * need more than one block and their positions decrease, since no cut is then exact.
 */
export function rowBlocks(pos: ArrayLike<number>, maxRows: number, what: () => string): [number, number][] {
  const T = pos.length;
  if (T <= maxRows) return [[0, T]];
  for (let i = 1; i < T; i++) {
    if (pos[i] < pos[i - 1]) throw new Error(`${what()}, and its rows' positions decrease (row ${i}), so they cannot be computed in blocks`);
  }
  const out: [number, number][] = [];
  for (let a = 0; a < T; ) {
    let b = Math.min(T, a + maxRows);
    while (b < T && b > a && pos[b] === pos[b - 1]) b--;
    if (b === a) throw new Error(`${what()}, and more than ${maxRows} of its rows share position ${pos[a]}`);
    out.push([a, b]);
    a = b;
  }
  return out;
}
