"""Export of a trained TinyLlama (model.py) as a Hugging Face folder: transformers' own
LlamaForCausalLM with the same weights, saved as F16 safetensors with config.json,
generation_config.json and the tokenizer, then reloaded the way users load it and checked
against the training model's logits.
"""
from __future__ import annotations

import os
import shutil

from model import ModelArgs


def hf_config(m: ModelArgs, tok_cfg):
    """transformers' LlamaConfig for the training model's shape (its ModelArgs, the one source)."""
    from transformers import LlamaConfig
    return LlamaConfig(
        vocab_size=m.vocab_size, hidden_size=m.hidden_size, intermediate_size=m.intermediate_size,
        num_hidden_layers=m.num_hidden_layers, num_attention_heads=m.num_attention_heads,
        num_key_value_heads=m.num_key_value_heads, head_dim=m.head_dim,
        max_position_embeddings=m.max_position_embeddings, rms_norm_eps=m.rms_norm_eps,
        rope_theta=m.rope_theta, hidden_act='silu', attention_bias=False, mlp_bias=False,
        tie_word_embeddings=m.tie_word_embeddings, bos_token_id=tok_cfg['bos'], eos_token_id=tok_cfg['eos'],
        pad_token_id=tok_cfg['pad'], initializer_range=m.initializer_range, use_cache=True,
    )


def to_hf(model, tok_cfg):
    import torch
    from transformers import LlamaForCausalLM
    hf = LlamaForCausalLM(hf_config(model.args, tok_cfg)).eval()
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    missing = [m for m in missing if not m.endswith('rotary_emb.inv_freq') and m != 'lm_head.weight']
    if missing or unexpected:
        raise RuntimeError(f'state dict mismatch: missing {missing}, unexpected {unexpected}')
    hf.tie_weights()
    with torch.no_grad():
        assert torch.equal(hf.lm_head.weight, hf.model.embed_tokens.weight)
    return hf


def export(model, tok_cfg, out: str, tokenizer_src: str, log):
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig
    hf = to_hf(model, tok_cfg)
    tmp = out + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    hf.to(torch.float16)
    hf.generation_config = GenerationConfig(bos_token_id=tok_cfg['bos'], eos_token_id=tok_cfg['eos'],
                                            pad_token_id=tok_cfg['pad'], do_sample=False, max_new_tokens=32)
    hf.save_pretrained(tmp, safe_serialization=True)
    for f in ('tokenizer.json', 'tokenizer_config.json'):
        shutil.copy(os.path.join(tokenizer_src, f), os.path.join(tmp, f))
    # reload the way users will, and check it against the training model
    re = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, model.args.vocab_size, (1, 300), generator=g)
    with torch.no_grad():
        want = model(ids, torch.arange(300)[None], None).float()
        got = re(ids).logits.float()
    err = ((got - want).abs().max() / (want.max() - want.min())).item()
    agree = (got.argmax(-1) == want.argmax(-1)).float().mean().item()
    log(f'export check: max |logit diff| / logit range = {err:.2e}, argmax agreement {agree:.4f}')
    if err > 2e-2:
        raise RuntimeError(f'exported model does not match the trained one (relative error {err:.3e})')
    if os.path.isdir(out):
        for f in os.listdir(out):
            if f not in ('tokenizer.json', 'tokenizer_config.json', 'README.md'):
                os.remove(os.path.join(out, f))
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(tmp):
        shutil.move(os.path.join(tmp, f), os.path.join(out, f))
    shutil.rmtree(tmp, ignore_errors=True)
    return {'export_rel_err': err, 'export_argmax_agree': agree}
