//! The sandbox against the built-in validator, a validator written in WAT, and hostile modules.

use std::time::{Duration, Instant};

use super::*;

/// The 2048 test run: seed 2, 1 000 moves, 20 900 points (`shared/game2048/tests/data`).
const RUN_1000: &[u8] = include_bytes!("../../../shared/game2048/tests/data/seed2-1000-moves.txt");

/// The example validator of `docs/validators.md`, written in WAT.
const CLICKS_WAT: &str = include_str!("../../../docs/examples/clicks.wat");

fn sandbox() -> Sandbox {
    Sandbox::new(Limits {
        fuel: 50_000_000,
        memory_bytes: 4 << 20,
        threads: 1,
        ..Limits::default()
    })
    .unwrap()
}

fn wat(text: &str) -> Vec<u8> {
    wat::parse_str(text).unwrap()
}

/// A module with the ABI's exports around a `validate` body (which returns an i64).
fn with_body(body: &str) -> Vec<u8> {
    wat(&format!(
        r#"(module
            (memory (export "memory") 1)
            (func (export "alloc") (param i32) (result i32) i32.const 1024)
            (func $recurse (result i64) call $recurse)
            (func (export "validate") (param i64 i32 i32 i64) (result i64) {body}))"#
    ))
}

/// The built-in validator scores the known 1 000-move run, and refuses a forged proof with the
/// rules' own code.
#[tokio::test]
async fn builtin_2048_scores_a_known_run() {
    let sb = sandbox();
    let v = sb.compile(BUILTIN_2048).unwrap();
    assert_eq!(
        sb.verify(&v, 2, RUN_1000.to_vec(), 600_000).await,
        Ok(20_900)
    );
    assert_eq!(
        sb.verify(&v, 2, b"udlx".to_vec(), 600_000).await,
        Err(VerifyError::Refused(-1))
    );
    // Another seed, same moves: not this score (refused, or another score).
    assert_ne!(
        sb.verify(&v, 3, RUN_1000.to_vec(), 600_000).await,
        Ok(20_900)
    );
}

/// A proof over the limit is refused before it reaches the module.
#[tokio::test]
async fn oversize_proofs_are_refused() {
    let sb = sandbox();
    let v = sb.compile(BUILTIN_2048).unwrap();
    let big = vec![b'u'; sb.limits().proof_bytes + 1];
    assert_eq!(
        sb.verify(&v, 2, big, 600_000).await,
        Err(VerifyError::ProofTooLarge(65_537, 65_536))
    );
}

/// Modules that break the ABI are refused when compiled, each with its code.
#[test]
fn modules_outside_the_abi_are_refused_at_compile() {
    let sb = sandbox();
    let refused = |bytes: &[u8]| sb.compile(bytes).err().map(|e| (e.code(), e.to_string()));
    let (code, msg) = refused(b"\0asm\x01\0\0\0garbage").unwrap();
    assert_eq!(code, "invalid_module", "{msg}");
    assert_eq!(refused(b"not wasm at all").unwrap().0, "invalid_module");
    let import = wat(
        r#"(module (import "env" "now" (func)) (memory (export "memory") 1)
        (func (export "alloc") (param i32) (result i32) i32.const 0)
        (func (export "validate") (param i64 i32 i32 i64) (result i64) i64.const 0))"#,
    );
    assert_eq!(
        sb.compile(&import).err(),
        Some(ModuleError::ForbiddenImport("env.now".into()))
    );
    let no_validate = wat(r#"(module (memory (export "memory") 1)
        (func (export "alloc") (param i32) (result i32) i32.const 0))"#);
    assert_eq!(
        sb.compile(&no_validate).err(),
        Some(ModuleError::MissingExport("validate"))
    );
    let wrong = wat(r#"(module (memory (export "memory") 1)
        (func (export "alloc") (param i32) (result i32) i32.const 0)
        (func (export "validate") (param i32) (result i64) i64.const 0))"#);
    assert_eq!(refused(&wrong).unwrap().0, "wrong_exports");
    let huge = wat(r#"(module (memory (export "memory") 1000)
        (func (export "alloc") (param i32) (result i32) i32.const 0)
        (func (export "validate") (param i64 i32 i32 i64) (result i64) i64.const 0))"#);
    assert_eq!(refused(&huge).unwrap().0, "memory_limit");
}

/// Hostile validators are stopped with a clear error, and the same sandbox still verifies a
/// real run correctly afterwards.
#[tokio::test]
async fn hostile_validators_are_stopped() {
    let sb = sandbox();
    let cases = [
        ("(loop br 0) i64.const 0", VerifyError::OutOfFuel),
        (
            "(loop (br_if 0 (i32.ne (memory.grow (i32.const 1)) (i32.const -1)))) i64.const 7",
            VerifyError::MemoryLimit,
        ),
        (
            "unreachable",
            VerifyError::Trap("wasm trap: wasm `unreachable` instruction executed".into()),
        ),
        ("call $recurse", VerifyError::StackOverflow),
    ];
    for (body, expected) in cases {
        let v = sb.compile(&with_body(body)).unwrap();
        let started = Instant::now();
        let got = sb.verify(&v, 1, b"x".to_vec(), 1000).await;
        assert_eq!(got, Err(expected), "{body}");
        // Fuel bounds the loop well inside the deadline (2 s), even on a loaded machine.
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{body}: {:?}",
            started.elapsed()
        );
    }
    let v = sb.compile(BUILTIN_2048).unwrap();
    assert_eq!(
        sb.verify(&v, 2, RUN_1000.to_vec(), 600_000).await,
        Ok(20_900)
    );
}

/// A run that outlives its deadline is interrupted even with fuel to spare.
#[tokio::test]
async fn the_deadline_interrupts_a_run_with_fuel_left() {
    let sb = Sandbox::new(Limits {
        fuel: u64::MAX / 2,
        deadline: Duration::from_millis(100),
        threads: 1,
        ..Limits::default()
    })
    .unwrap();
    let v = sb.compile(&with_body("(loop br 0) i64.const 0")).unwrap();
    let started = Instant::now();
    assert_eq!(
        sb.verify(&v, 1, vec![], 0).await,
        Err(VerifyError::Deadline)
    );
    // 100 ms deadline; the margin is for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// With the only verification thread busy and the queue full, more verifications are refused
/// as `busy` at once instead of waiting.
#[tokio::test]
async fn a_full_queue_refuses_with_busy() {
    let sb = Sandbox::new(Limits {
        fuel: u64::MAX / 2,
        deadline: Duration::from_millis(500),
        threads: 1,
        queue: 1,
        ..Limits::default()
    })
    .unwrap();
    let spin = sb.compile(&with_body("(loop br 0) i64.const 0")).unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (sb, spin) = (sb.clone(), spin.clone());
        tasks.push(tokio::spawn(
            async move { sb.verify(&spin, 1, vec![], 0).await },
        ));
    }
    let mut busy = 0;
    for t in tasks {
        match t.await.unwrap() {
            Err(VerifyError::Busy) => busy += 1,
            Err(VerifyError::Deadline) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    // One running and one queued at most; the other six (or more) find the queue full.
    assert!(busy >= 6, "{busy} of 8 refused as busy");
}

/// The WAT example validator of `docs/validators.md` scores clicks and refuses each forgery
/// with its documented code.
#[tokio::test]
async fn the_wat_example_validator_works() {
    let sb = sandbox();
    let v = sb.compile(&wat(CLICKS_WAT)).unwrap();
    let clicks = |ts: &[u32]| ts.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<u8>>();
    assert_eq!(
        sb.verify(&v, 0, clicks(&[100, 300, 450]), 1000).await,
        Ok(3)
    );
    assert_eq!(sb.verify(&v, 0, vec![], 1000).await, Ok(0));
    assert_eq!(
        sb.verify(&v, 0, vec![1, 2, 3], 1000).await,
        Err(VerifyError::Refused(-1))
    );
    assert_eq!(
        sb.verify(&v, 0, clicks(&[100, 120]), 1000).await,
        Err(VerifyError::Refused(-2))
    );
    assert_eq!(
        sb.verify(&v, 0, clicks(&[300, 200]), 1000).await,
        Err(VerifyError::Refused(-2))
    );
    assert_eq!(
        sb.verify(&v, 0, clicks(&[100, 2000]), 1000).await,
        Err(VerifyError::Refused(-3))
    );
}

/// The registry compiles a module once however often it is asked for, even by many tasks at
/// once after the first, keeps different bytes apart, and does not cache a refused module.
#[tokio::test]
async fn the_registry_compiles_each_module_once() {
    let reg = Registry::new(sandbox()).unwrap();
    assert_eq!(
        reg.sandbox()
            .verify(reg.builtin(), 2, RUN_1000.to_vec(), 600_000)
            .await,
        Ok(20_900)
    );
    let clicks: std::sync::Arc<[u8]> = wat(CLICKS_WAT).into();
    let (v, key) = reg.compile(clicks.clone()).await.unwrap();
    assert_eq!(key, registry::digest(&clicks));
    assert_eq!(reg.compiled(), 1);
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (reg, clicks) = (reg.clone(), clicks.clone());
        tasks.push(tokio::spawn(async move {
            reg.compile(clicks).await.map(|(_, k)| k)
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), Ok(key));
    }
    assert_eq!(
        reg.compiled(),
        1,
        "16 requests for cached bytes compiled again"
    );
    assert_eq!(reg.sandbox().verify(&v, 0, vec![0; 4], 10).await, Ok(1));
    // Other bytes are another module.
    let (_, other) = reg.compile(BUILTIN_2048.into()).await.unwrap();
    assert_ne!(other, key);
    assert_eq!(reg.compiled(), 2);
    // A refused module is refused again (and compiled again) every time: nothing cached.
    for _ in 0..2 {
        let err = reg.compile(b"junk".as_slice().into()).await.err().unwrap();
        assert_eq!(err.code(), "invalid_module");
    }
    assert_eq!(reg.compiled(), 2);
}

/// The embedded `2048.wasm` computes what the rules crate computes natively, on 40 runs of
/// every length up to a finished game, and on forged proofs: if the rules change and
/// `cargo xtask wasm` was not run, this fails.
#[tokio::test]
async fn the_embedded_2048_validator_matches_the_rules_source() {
    use scorecast_game2048::{Dir, Game, Mulberry32};
    use scorecast_validator_2048::validate_proof;

    let sb = sandbox();
    let v = sb.compile(BUILTIN_2048).unwrap();
    let mut moves = Mulberry32::new(7);
    for seed in 0..40u32 {
        let mut g = Game::<4>::new(seed);
        let mut proof = Vec::new();
        let stop = (moves.next_u32() % 600) as usize;
        while !g.over && proof.len() < stop {
            let d = Dir::ALL[(moves.next_u32() % 4) as usize];
            if g.play(d).moved {
                proof.push(d.as_byte());
            }
        }
        let mut forged = proof.clone();
        forged.push(b"udlrx"[(moves.next_u32() % 5) as usize]);
        for (p, elapsed) in [(&proof, 600_000), (&proof, 100), (&forged, 600_000)] {
            let native = validate_proof(i64::from(seed), p, elapsed);
            let wasm = match sb.verify(&v, i64::from(seed), p.clone(), elapsed).await {
                Ok(score) => score as i64,
                Err(VerifyError::Refused(code)) => code,
                Err(e) => panic!("seed {seed}: {e}"),
            };
            assert_eq!(wasm, native, "seed {seed}, {} moves", p.len());
        }
    }
}

/// Verifications run at a lower scheduling priority than the threads that created the pool
/// (nice raised by the `nice` limit, 10 by default, capped at 19), so a validator spinning on
/// every core leaves the socket workers their CPU; with 0 they keep the server's priority.
#[cfg(target_os = "linux")]
#[test]
fn verification_threads_run_at_a_lower_priority() {
    let nice_of_this_thread = || {
        // SAFETY: reads this thread's nice value; no memory is shared.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        }
    };
    let here = nice_of_this_thread();
    let nice_in = |nice: i32| {
        let pool = pool::Pool::new(1, nice, 1).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.try_run(move || tx.send(nice_of_this_thread()).unwrap())
            .unwrap();
        rx.recv_timeout(Duration::from_secs(10)).unwrap()
    };
    let default = Limits::default().nice;
    assert_eq!(default, 10);
    let there = nice_in(default);
    assert_eq!(there, (here + default).min(19));
    assert!(
        there > here || here == 19,
        "{there} is not lower than {here}"
    );
    assert_eq!(nice_in(0), here, "0 keeps the server's priority");
}
