//! What the readers' tests share: the stack's database, migrated.

use service::testing::stack;
use sqlx::PgPool;

pub(crate) async fn database() -> PgPool {
    let pool = PgPool::connect(stack().var("DATABASE_URL"))
        .await
        .expect("database");
    schema::migrate(&pool).await.expect("migrations");
    pool
}
