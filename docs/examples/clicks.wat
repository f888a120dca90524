;; An example validator written by hand in WebAssembly text (docs/validators.md).
;;
;; The game: click as often as you can. The proof is the click times, each a little-endian u32 of
;; milliseconds since the run started; the score is the number of clicks.
;; Refusals: -1 the proof is not a whole number of u32s; -2 two clicks less than 50 ms apart
;; (or out of order); -3 a click later than the time the run has lasted.
;;
;; Build: `wat2wasm clicks.wat` (wabt) or `wasm-tools parse clicks.wat -o clicks.wasm`.
(module
  (memory (export "memory") 1)

  ;; Grows memory by enough pages for `len` bytes and returns where they start (0 if it cannot).
  (func (export "alloc") (param $len i32) (result i32)
    (local $old i32)
    (local.set $old
      (memory.grow (i32.div_u (i32.add (local.get $len) (i32.const 65535)) (i32.const 65536))))
    (if (i32.eq (local.get $old) (i32.const -1)) (then (return (i32.const 0))))
    (i32.mul (local.get $old) (i32.const 65536)))

  (func (export "validate")
    (param $seed i64) (param $ptr i32) (param $len i32) (param $elapsed_ms i64) (result i64)
    (local $i i32) (local $t i64) (local $prev i64)
    (if (i32.rem_u (local.get $len) (i32.const 4)) (then (return (i64.const -1))))
    ;; So that a first click at 0 ms is 50 ms after "the previous one".
    (local.set $prev (i64.const -50))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (local.set $t (i64.load32_u (i32.add (local.get $ptr) (local.get $i))))
        (if (i64.lt_s (i64.sub (local.get $t) (local.get $prev)) (i64.const 50))
          (then (return (i64.const -2))))
        (if (i64.gt_s (local.get $t) (local.get $elapsed_ms))
          (then (return (i64.const -3))))
        (local.set $prev (local.get $t))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $next)))
    (i64.extend_i32_u (i32.div_u (local.get $len) (i32.const 4)))))
