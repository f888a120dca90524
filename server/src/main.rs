use clap::Parser;
use scorecast_server::config::{Cli, Settings};
use scorecast_server::startup::{init_logging, Application};

#[actix_web::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut settings = Settings::load(&cli)?;
    let format = settings.log_format;
    init_logging(format);
    let generated = settings.finish()?;
    let app = Application::build(settings).await?;
    app.announce(format, generated.as_ref());
    app.run_until_stopped().await
}
