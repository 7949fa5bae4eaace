#!/usr/bin/env bash
# Smoke tests of `kvengine bench attention` and `kvengine bench decode` with tiny sweeps (~1 s
# each): the JSON rows carry the documented fields with sane values (checked with jq), the text
# report has its tables, and bad flag values fail with a message.
# Usage: bench_perf_test.sh KVENGINE_BINARY SCRATCH_DIR attention|decode
set -uo pipefail
what="$3"
# shellcheck source=tools/test_lib.sh
source "$(dirname "$0")/test_lib.sh"

case "$what" in
  attention)
    small=(--contexts 1k,2k --kv-dtypes f16,int8 -t 1 --min-time 0.02 --footprint 16MiB
           --read-bw-size 64MiB)
    json="$scratch/attention.json"
    if "$bin" bench attention "${small[@]}" --json > "$json"; then pass attention_json_runs
    else fail attention_json_runs; fi
    expect attention_rows 'length == 8' "$json"
    expect attention_fields 'all(.[]; has("kv_dtype") and has("context") and has("threads")
      and has("layout") and has("kv_gb_per_s") and has("read_bw_gb_per_s")
      and has("fraction_of_read_bw") and has("tokens_per_s") and has("kv_bytes_per_token")
      and has("prefetch") and has("kv_heads_per_item") and has("fma_ceiling_gb_per_s"))' "$json"
    # f16 at 4 query heads per KV head: 2 multiply-adds per byte.
    expect attention_fma_ceiling 'map(select(.kv_dtype == "f16")) | all(.[];
      (.fma_ceiling_gb_per_s - .fma_peak_gmacs_per_s / 2 | fabs) < 1e-6 * .fma_peak_gmacs_per_s)' "$json"
    # The same at the rate of multiply-adds fed by f16 conversions, on f16 rows only.
    expect attention_f16_ceiling 'all(.[]; .f16_fma_peak_gmacs_per_s > 0
      and (has("f16_fma_ceiling_gb_per_s") == (.kv_dtype == "f16")))
      and (map(select(.kv_dtype == "f16")) | all(.[]; (.f16_fma_ceiling_gb_per_s
      - .f16_fma_peak_gmacs_per_s / 2 | fabs) < 1e-6 * .f16_fma_peak_gmacs_per_s))' "$json"
    expect attention_layouts '[.[].layout] | unique == ["contiguous", "paged"]' "$json"
    expect attention_dtypes '[.[].kv_dtype] | unique == ["f16", "int8"]' "$json"
    expect attention_values 'all(.[]; .kv_gb_per_s > 0 and .read_bw_gb_per_s > 0
      and .fraction_of_read_bw > 0 and .threads == 1
      and (.fraction_of_read_bw - .kv_gb_per_s / .read_bw_gb_per_s | fabs) < 1e-9)' "$json"
    # f16: 2 bytes x 128 elements x 8 heads x (K + V) per token.
    expect attention_kv_bytes 'map(select(.kv_dtype == "f16" and .context == 1024))
      | all(.[]; .kv_bytes_per_token == 4194304)' "$json"
    expect attention_block 'all(.[]; .block_size == (if .layout == "paged" then 16 else .context end))' "$json"
    # The kernel that ran, and int16 arithmetic only for int8 (on the kernels that have it).
    expect attention_kernel 'all(.[]; (.kernel | length) > 0
      and (.arithmetic == "f32" or (.arithmetic == "int16" and .kv_dtype == "int8")))
      and (map(select(.kv_dtype == "f16")) | all(.[]; .arithmetic == "f32"))
      and (map(select(.kv_dtype == "int8")) | all(.[]; .arithmetic ==
        (if (.kernel | test("_(VNNI|I16)(_BF16)?$")) then "int16" else "f32" end)))' "$json"
    text=$("$bin" bench attention "${small[@]}" 2>&1)
    check_text attention_text "$text" "paged / contiguous" "tokens/s over f16" \
      "Read bandwidth, this run .*1 thread [0-9.]+ GB/s" "^kernel [A-Z0-9_]+:.* for .*f16"
    svg="$scratch/attention.svg"
    # 8 rows, then int8's 4 over f16.
    check_svg attention_svg "$svg" 12 -- "$bin" bench attention "${small[@]}" --svg "$svg"
    check_error attention_svg_unwritable "cannot write" -- "$bin" bench attention "${small[@]}" \
      --svg "$scratch/no/such/dir/a.svg"
    check_usage attention_bad_dtype "kv-dtypes" -- "$bin" bench attention --kv-dtypes int7
    check_usage attention_bad_layout "layouts" -- "$bin" bench attention --layouts strided
    check_usage attention_bad_context "contexts" -- "$bin" bench attention --contexts 0
    check_usage attention_bad_prefetch "prefetch" -- "$bin" bench attention --prefetch l3
    # --footprint auto (the default): copies cover 4x the last-level cache (300 MiB on one Xeon VM,
    # beyond the old fixed 192 MiB), at least 192 MiB; f16 at 1k is 4 MiB a copy.
    llc=$(getconf LEVEL3_CACHE_SIZE 2>/dev/null || true)
    case "$llc" in ''|*[!0-9]*|0) llc=$(getconf LEVEL2_CACHE_SIZE 2>/dev/null || echo 0) ;; esac
    case "$llc" in ''|*[!0-9]*) llc=0 ;; esac
    json="$scratch/attention_auto.json"
    "$bin" bench attention --contexts 1k --kv-dtypes f16 -t 1 --layouts paged --min-time 0.01 \
      --read-bw-size 64MiB --json > "$json" || true
    expect attention_footprint_auto "(.[0].copies * 4194304) >= ([4 * $llc, 201326592] | max)" "$json"
    json="$scratch/attention_rounds.json"
    "$bin" bench attention --contexts 1k --kv-dtypes f16 -t 1 --layouts paged,contiguous \
      --min-time 0.01 --footprint 16MiB --read-bw-size 64MiB --rounds 2 --json > "$json" || true
    expect attention_rounds 'length == 2 and all(.[]; .rounds == 2)' "$json"
    check_usage attention_bad_footprint "footprint" -- "$bin" bench attention --footprint lots
    check_usage attention_bad_read_bw "read-bw-size" -- "$bin" bench attention --read-bw-size 1KiB
    json="$scratch/attention_prefetch.json"
    "$bin" bench attention --contexts 1k --kv-dtypes int8 -t 1 --layouts paged --min-time 0.02 \
      --footprint 16MiB --read-bw-size 64MiB --prefetch l1,l2,auto --json > "$json" || true
    expect attention_prefetch_levels '[.[].prefetch] == ["l1", "l2"]' "$json"
    # KV heads per item: auto (all 8 heads for paged blocks of 16 f16 rows, one thread) and 1.
    json="$scratch/attention_item_heads.json"
    "$bin" bench attention --contexts 1k --kv-dtypes f16 -t 1 --layouts paged --min-time 0.02 \
      --footprint 16MiB --read-bw-size 64MiB --item-heads auto,1 --json > "$json" || true
    expect attention_item_heads '[.[] | [.item_heads, .kv_heads_per_item]] == [["auto", 8], ["1", 1]]' "$json"
    check_usage attention_bad_item_heads "item-heads" -- "$bin" bench attention --item-heads 9
    # --attention-kernel: the reference kernel by name (f32 arithmetic for every dtype), and an
    # unknown name is an error naming the ones there are.
    json="$scratch/attention_forced.json"
    "$bin" bench attention --contexts 1k --kv-dtypes int8 -t 1 --layouts paged --min-time 0.01 \
      --footprint 16MiB --read-bw-size 64MiB --attention-kernel REF --json > "$json" || true
    expect attention_forced_kernel 'all(.[]; .kernel == "ref" and .arithmetic == "f32")' "$json"
    check_error attention_bad_kernel "available on this CPU" -- "$bin" bench attention \
      --attention-kernel AVX9000
    ;;
  decode)
    small=(-m tiny -t 1 --depths 0,64 --batches 1,4 -p 32 --steps 4 --read-bw-size 64MiB)
    json="$scratch/decode.json"
    if "$bin" bench decode "${small[@]}" --json > "$json"; then pass decode_json_runs
    else fail decode_json_runs; fi
    # f16 and int8, each: depth 0 and 64 at batch 1, batch 4 at depth 0.
    expect decode_rows 'length == 6' "$json"
    expect decode_fields 'all(.[]; has("kv_dtype") and has("depth") and has("batch")
      and has("decode_tokens_per_s") and has("read_bw_gb_per_s") and has("bytes_per_step")
      and has("implied_gb_per_s") and has("weight_bytes_per_step") and has("kv_bytes_per_step"))' "$json"
    expect decode_prefill 'map(select(has("prefill_tokens_per_s"))) | length == 2
      and all(.[]; .depth == 0 and .batch == 1 and .prefill_tokens == 32 and .prefill_tokens_per_s > 0)' "$json"
    expect decode_values 'all(.[]; .decode_tokens_per_s > 0 and .read_bw_gb_per_s > 0
      and (.fraction_of_read_bw - .implied_gb_per_s / .read_bw_gb_per_s | fabs) < 1e-9
      and .bytes_per_step == .weight_bytes_per_step + .kv_bytes_per_step and .threads == 1)' "$json"
    expect decode_random_fill 'all(.[]; .kv_filled_randomly == (.depth > 0))' "$json"
    expect decode_kernels 'all(.[]; (.weight_kernel | length) > 0 and (.attention_kernel | length) > 0)' "$json"
    expect decode_macs 'all(.[]; .weight_macs_per_token > 0 and .fma_peak_gmacs > 0
      and (.weight_gmacs_per_s - .weight_macs_per_token * .decode_tokens_per_s / 1e9 | fabs) < 1e-6
      and (.fraction_of_fma_peak - .weight_gmacs_per_s / .fma_peak_gmacs | fabs) < 1e-9)
      and all(.[] | select(has("prefill_tokens")); .prefill_fma_peak_gmacs > 0
      and .prefill_weight_gmacs_per_s > 0 and .prefill_fraction_of_fma_peak > 0)' "$json"
    expect decode_kv_grows 'map(select(.kv_dtype == "f16" and .batch == 1)) | sort_by(.depth)
      | .[0].kv_bytes_per_step < .[1].kv_bytes_per_step' "$json"
    expect decode_int8_smaller '(map(select(.kv_dtype == "int8" and .depth == 64))[0].kv_bytes_per_step)
      < (map(select(.kv_dtype == "f16" and .depth == 64))[0].kv_bytes_per_step)' "$json"
    text=$("$bin" bench decode "${small[@]}" --kv-dtypes int8 2>&1)
    check_text decode_text "$text" "filled with random values" "^prefill int8 " "^int8 +64 +1 " \
      "^kernels: [A-Z0-9_]+ \(weights\), [A-Z0-9_]+ \(attention\)"
    svg="$scratch/decode.svg"
    # Depths 0, 64; batches 1, 4; the prefill.
    check_svg decode_svg "$svg" 5 -- "$bin" bench decode "${small[@]}" --kv-dtypes int8 --svg "$svg"
    # A run that fails leaves an existing chart file as it was.
    echo keep > "$scratch/keep.svg"
    "$bin" bench decode -m tiny --depths 1M --svg "$scratch/keep.svg" > /dev/null 2>&1
    if [ "$(cat "$scratch/keep.svg")" = keep ]; then pass decode_svg_kept
    else fail decode_svg_kept; fi
    check_error decode_svg_unwritable "cannot write" -- "$bin" bench decode "${small[@]}" \
      --svg "$scratch/no/such/dir/d.svg"
    check_usage decode_bad_dtype "kv-dtypes" -- "$bin" bench decode -m tiny --kv-dtypes int7
    check_error decode_bad_attention_kernel "unknown attention kernel" -- "$bin" bench decode \
      -m tiny --attention-kernel AVX9000
    check_error decode_too_deep "context" -- "$bin" bench decode -m tiny --depths 1M
    check_error decode_bad_model "^kvengine: " -- "$bin" bench decode -m "$scratch/none.gguf"
    check_usage decode_bad_read_bw "read-bw-size" -- "$bin" bench decode -m tiny \
      --read-bw-size auto1
    check_usage decode_bad_rounds "rounds" -- "$bin" bench decode -m tiny --rounds 0
    json="$scratch/decode_rounds.json"
    "$bin" bench decode "${small[@]}" --kv-dtypes f16 --rounds 2 --json > "$json" || true
    expect decode_rounds 'length == 3 and all(.[]; .rounds == 2 and .decode_tokens_per_s > 0)' "$json"
    ;;
  *)
    echo "usage: $0 KVENGINE_BINARY SCRATCH_DIR attention|decode" >&2
    exit 2
    ;;
esac
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
