//! The validator sandbox: one wasmtime [`Engine`] per process, each validator checked against
//! the ABI and compiled once ([`Validator`]), and a fresh [`Store`] per verification with its
//! own limits:
//!
//! - fuel: every wasm instruction costs fuel; a module that runs out traps (`out_of_fuel`);
//! - memory: a [`ResourceLimiter`] refuses growth past the limit, and a verification during
//!   which the module hit it is refused (`memory_limit`) whatever it returned;
//! - stack: the engine's wasm stack limit turns runaway recursion into a trap
//!   (`stack_overflow`);
//! - deadline: epoch interruption, ticked by one thread, stops a run that outlives it, and a
//!   verification still queued at its deadline is not started (`deadline`);
//! - proof size: checked before anything is queued (`proof_too_large`).
//!
//! A module is checked when it is compiled: valid wasm, no imports, the three exports of the
//! ABI with their exact types, an initial memory within the limit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{
    Config, Engine, ExternType, InstancePre, Linker, Module, ResourceLimiter, Store, Trap, ValType,
};

use super::pool::Pool;

/// Wasm page size.
const PAGE: u64 = 65_536;

/// How often the deadline clock ticks: a run stops at most one tick after its deadline.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// The limits of every verification, and the size of the verification pool.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Fuel (about one unit per wasm instruction) per verification.
    pub fuel: u64,
    /// Linear memory per verification, in bytes.
    pub memory_bytes: u64,
    /// The largest proof accepted, in bytes.
    pub proof_bytes: usize,
    /// From queueing to the end of the run.
    pub deadline: Duration,
    /// Wasm stack per verification, in bytes.
    pub max_wasm_stack: usize,
    /// Verification threads.
    pub threads: usize,
    /// How much the verification threads raise their nice value (see [`Pool::new`]).
    pub nice: i32,
    /// Verifications waiting for a thread before more are refused as `busy`.
    pub queue: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // A 1 000-move 2048 run uses about 1.8 million (BENCHMARKS.md); a 64 KiB proof of 2048
            // moves about 120 million.
            fuel: 400_000_000,
            memory_bytes: 16 << 20,
            proof_bytes: 64 << 10,
            deadline: Duration::from_secs(2),
            max_wasm_stack: 256 << 10,
            threads: 2,
            nice: 10,
            queue: 256,
        }
    }
}

/// Why a module cannot be a validator.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ModuleError {
    #[error("not a valid WebAssembly module: {0}")]
    Invalid(String),
    #[error("imports {0}; a validator may import nothing")]
    ForbiddenImport(String),
    #[error("missing export {0}")]
    MissingExport(&'static str),
    #[error("export {name} has the wrong type: expected {expected}")]
    WrongExport {
        name: &'static str,
        expected: &'static str,
    },
    #[error("starts with {0} bytes of memory, more than the limit of {1}")]
    MemoryTooLarge(u64, u64),
}

impl ModuleError {
    /// The stable code of this error (`docs/validators.md`).
    pub fn code(&self) -> &'static str {
        match self {
            ModuleError::Invalid(_) => "invalid_module",
            ModuleError::ForbiddenImport(_) => "forbidden_import",
            ModuleError::MissingExport(_) | ModuleError::WrongExport { .. } => "wrong_exports",
            ModuleError::MemoryTooLarge(..) => "memory_limit",
        }
    }
}

/// Why a verification gave no score.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum VerifyError {
    /// The validator looked at the proof and refused it, with its own reason code (< 0).
    #[error("the validator refused the proof (reason {0})")]
    Refused(i64),
    #[error("the proof is {0} bytes, more than the limit of {1}")]
    ProofTooLarge(usize, usize),
    #[error("the validator ran out of fuel")]
    OutOfFuel,
    #[error("the validator tried to use more memory than the limit")]
    MemoryLimit,
    #[error("the validator overflowed its stack")]
    StackOverflow,
    #[error("the verification did not finish before its deadline")]
    Deadline,
    #[error("the validator trapped: {0}")]
    Trap(String),
    #[error("the validator broke the ABI: {0}")]
    Abi(String),
    #[error("too many verifications are waiting; retry")]
    Busy,
}

impl VerifyError {
    /// The stable code of this error (`docs/validators.md`).
    pub fn code(&self) -> &'static str {
        match self {
            VerifyError::Refused(_) => "proof_refused",
            VerifyError::ProofTooLarge(..) => "proof_too_large",
            VerifyError::OutOfFuel => "out_of_fuel",
            VerifyError::MemoryLimit => "memory_limit",
            VerifyError::StackOverflow => "stack_overflow",
            VerifyError::Deadline => "deadline",
            VerifyError::Trap(_) => "trap",
            VerifyError::Abi(_) => "abi",
            VerifyError::Busy => "busy",
        }
    }
}

/// A checked, compiled validator: cheap to clone, shared by every verification.
#[derive(Clone)]
pub struct Validator {
    pre: InstancePre<Limiter>,
}

/// The engine, the limits and the verification threads. Cheap to clone.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    limits: Limits,
    pool: Pool,
    stop: Arc<AtomicBool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Sandbox {
    pub fn new(limits: Limits) -> anyhow::Result<Sandbox> {
        let mut config = Config::new();
        config
            .consume_fuel(true)
            .epoch_interruption(true)
            .max_wasm_stack(limits.max_wasm_stack);
        let engine = Engine::new(&config)?;
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = {
            let (engine, stop) = (engine.clone(), Arc::clone(&stop));
            move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            }
        };
        std::thread::Builder::new()
            .name("validator-clock".into())
            .spawn(ticker)?;
        let pool = Pool::new(limits.threads, limits.nice, limits.queue)?;
        Ok(Sandbox {
            inner: Arc::new(Inner {
                engine,
                limits,
                pool,
                stop,
            }),
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Checks `bytes` against the ABI and compiles them. Runs the compiler on the calling
    /// thread: call it off the async workers (it is done once per validator per instance).
    pub fn compile(&self, bytes: &[u8]) -> Result<Validator, ModuleError> {
        let engine = &self.inner.engine;
        let module =
            Module::new(engine, bytes).map_err(|e| ModuleError::Invalid(root_cause(&e)))?;
        if let Some(import) = module.imports().next() {
            return Err(ModuleError::ForbiddenImport(format!(
                "{}.{}",
                import.module(),
                import.name()
            )));
        }
        let export = |name: &'static str| {
            module
                .get_export(name)
                .ok_or(ModuleError::MissingExport(name))
        };
        match export("memory")? {
            ExternType::Memory(m) if !m.is_64() && !m.is_shared() => {
                let initial = m.minimum().saturating_mul(PAGE);
                if initial > self.inner.limits.memory_bytes {
                    return Err(ModuleError::MemoryTooLarge(
                        initial,
                        self.inner.limits.memory_bytes,
                    ));
                }
            }
            _ => {
                return Err(ModuleError::WrongExport {
                    name: "memory",
                    expected: "a 32-bit unshared memory",
                })
            }
        }
        let is_func = |name: &'static str, params: &[ValType], results: &[ValType]| {
            matches!(export(name), Ok(ExternType::Func(f))
                if f.params().len() == params.len()
                    && f.params().zip(params).all(|(a, b)| ValType::eq(&a, b))
                    && f.results().len() == results.len()
                    && f.results().zip(results).all(|(a, b)| ValType::eq(&a, b)))
        };
        export("alloc")?;
        if !is_func("alloc", &[ValType::I32], &[ValType::I32]) {
            return Err(ModuleError::WrongExport {
                name: "alloc",
                expected: "(i32) -> i32",
            });
        }
        export("validate")?;
        let validate = [ValType::I64, ValType::I32, ValType::I32, ValType::I64];
        if !is_func("validate", &validate, &[ValType::I64]) {
            return Err(ModuleError::WrongExport {
                name: "validate",
                expected: "(i64, i32, i32, i64) -> i64",
            });
        }
        let pre = Linker::new(engine)
            .instantiate_pre(&module)
            .map_err(|e| ModuleError::Invalid(root_cause(&e)))?;
        Ok(Validator { pre })
    }

    /// Replays `proof` from `seed` in `validator` on a verification thread: the score, or why
    /// there is none.
    pub async fn verify(
        &self,
        validator: &Validator,
        seed: i64,
        proof: Vec<u8>,
        elapsed_ms: i64,
    ) -> Result<u64, VerifyError> {
        let limits = &self.inner.limits;
        if proof.len() > limits.proof_bytes {
            return Err(VerifyError::ProofTooLarge(proof.len(), limits.proof_bytes));
        }
        let deadline = Instant::now() + limits.deadline;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job = {
            let (validator, limits) = (validator.clone(), limits.clone());
            move || {
                let result = if Instant::now() >= deadline {
                    Err(VerifyError::Deadline)
                } else {
                    run(&validator, &limits, deadline, seed, &proof, elapsed_ms)
                };
                let _ = tx.send(result);
            }
        };
        self.inner
            .pool
            .try_run(job)
            .map_err(|_| VerifyError::Busy)?;
        // The run itself stops at the deadline (epoch interruption); the margin covers the
        // clock's tick and the reply.
        let wait = limits.deadline + EPOCH_TICK * 4;
        match tokio::time::timeout(wait, rx).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) | Err(_) => Err(VerifyError::Deadline),
        }
    }
}

/// The store's data: the memory and table limits, and whether the module hit them.
struct Limiter {
    memory_bytes: usize,
    hit: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> anyhow::Result<bool> {
        let ok = desired <= self.memory_bytes;
        self.hit |= !ok;
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> anyhow::Result<bool> {
        // A table entry costs about as much as 8 bytes of memory.
        let ok = desired <= self.memory_bytes / 8;
        self.hit |= !ok;
        Ok(ok)
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        4
    }

    fn memories(&self) -> usize {
        1
    }
}

/// One verification, on the calling (verification) thread.
fn run(
    validator: &Validator,
    limits: &Limits,
    deadline: Instant,
    seed: i64,
    proof: &[u8],
    elapsed_ms: i64,
) -> Result<u64, VerifyError> {
    let engine = validator.pre.module().engine();
    let mut store = Store::new(
        engine,
        Limiter {
            memory_bytes: usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX),
            hit: false,
        },
    );
    store.limiter(|l| l);
    // unwrap: fuel is enabled on this engine (`Sandbox::new`).
    store.set_fuel(limits.fuel).unwrap();
    let left = deadline.saturating_duration_since(Instant::now());
    store.set_epoch_deadline((left.as_micros() / EPOCH_TICK.as_micros()) as u64 + 1);
    let result = call(validator, &mut store, seed, proof, elapsed_ms);
    if store.data().hit {
        return Err(VerifyError::MemoryLimit);
    }
    match result {
        Ok(score) if score >= 0 => Ok(score as u64),
        Ok(code) => Err(VerifyError::Refused(code)),
        Err(e) => Err(match e.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => VerifyError::OutOfFuel,
            Some(Trap::StackOverflow) => VerifyError::StackOverflow,
            Some(Trap::Interrupt) => VerifyError::Deadline,
            Some(trap) => VerifyError::Trap(trap.to_string()),
            None => VerifyError::Abi(root_cause(&e)),
        }),
    }
}

/// Instantiates the validator, copies the proof in through `alloc` and calls `validate`.
fn call(
    validator: &Validator,
    store: &mut Store<Limiter>,
    seed: i64,
    proof: &[u8],
    elapsed_ms: i64,
) -> anyhow::Result<i64> {
    let instance = validator.pre.instantiate(&mut *store)?;
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| anyhow::anyhow!("no memory"))?;
    let alloc = instance.get_typed_func::<i32, i32>(&mut *store, "alloc")?;
    let validate = instance.get_typed_func::<(i64, i32, i32, i64), i64>(&mut *store, "validate")?;
    // The proof limit keeps the length far below i32::MAX.
    let len = proof.len() as i32;
    let ptr = alloc.call(&mut *store, len)?;
    let at = usize::try_from(ptr).map_err(|_| anyhow::anyhow!("alloc returned {ptr}"))?;
    memory
        .write(&mut *store, at, proof)
        .map_err(|_| anyhow::anyhow!("alloc returned {ptr}, outside memory for {len} bytes"))?;
    validate.call(&mut *store, (seed, ptr, len, elapsed_ms))
}

/// The innermost message of an engine error (the outer ones say only "failed to compile").
fn root_cause(e: &anyhow::Error) -> String {
    e.chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
