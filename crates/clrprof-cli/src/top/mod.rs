pub fn run(_: crate::cli::TopArgs) -> anyhow::Result<i32> {
    todo!()
}
