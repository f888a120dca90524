use clap::Parser;
use scorecast_server::config::{Cli, Settings};
use scorecast_server::startup::Application;
use tracing_subscriber::EnvFilter;

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    let mut settings = Settings::load(&cli)?;
    if let Some(admin) = settings.finish()? {
        println!("dev admin token: {}", admin.expose());
    }
    let app = Application::build(settings).await?;
    println!("scorecast listening on http://127.0.0.1:{}", app.port());
    app.run_until_stopped().await
}
