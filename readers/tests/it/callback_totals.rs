//! `GET /app-callbacks` answers, for every filter, the page and the total that counting the
//! tenant's sessions themselves would: whatever inserted, moved or removed them (one statement
//! at a time or many rows at once), before the pipeline folds the changes into the kept
//! counts, after it, with folds racing each other and writers, and after counts that drifted
//! were rebuilt.

use readers::callbacks::{Filter, SessionStatus, list};
use readers::redaction::Visibility;
use readers::{Page, Tenant};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::database;

const APPS: [&str; 3] = ["kyc-check", "aml-screen", "doc-verify"];
const STATUSES: [SessionStatus; 4] = [
    SessionStatus::Pending,
    SessionStatus::Completed,
    SessionStatus::Failed,
    SessionStatus::TimedOut,
];

/// `count` pending sessions of `tenant` in one statement, apps taking turns, a run per three.
async fn open(pool: &PgPool, tenant: Uuid, count: i64) {
    sqlx::query(
        "INSERT INTO app_callback_sessions (id, tenant_id, app_name, version_id, action, \
         external_id, workflow_run_id, status, created_at) \
         SELECT gen_random_uuid(), $1, (ARRAY['kyc-check', 'aml-screen', 'doc-verify'])[1 + i % 3], \
                '00000000-0000-4000-8000-000000000001', 'verify', 'ext-' || gen_random_uuid(), \
                md5($1::text || (i / 3))::uuid, 'pending', \
                now() - make_interval(secs => i * 60) \
         FROM generate_series(0, $2 - 1) AS i",
    )
    .bind(tenant)
    .bind(count)
    .execute(pool)
    .await
    .expect("sessions opened");
}

/// Moves the sessions `which` selects to `status`, in one statement.
async fn settle(pool: &PgPool, tenant: Uuid, which: &str, status: &str) {
    // `which` is this file's own SQL.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE app_callback_sessions SET status = $2, completed_at = now() \
         WHERE tenant_id = $1 AND {which}"
    )))
    .bind(tenant)
    .bind(status)
    .execute(pool)
    .await
    .expect("sessions settled");
}

async fn fold(pool: &PgPool) {
    sqlx::query_scalar::<_, i64>("SELECT app_callback_session_counts_fold()")
        .fetch_one(pool)
        .await
        .expect("fold");
}

/// Every filter the list takes without a run (app, status, both, neither), and two of runs.
fn filters(runs: &[Uuid]) -> Vec<Filter> {
    let apps = APPS
        .iter()
        .map(|a| Some(a.to_string()))
        .chain([None, Some("absent".into())]);
    let mut all = Vec::new();
    for app in apps {
        for status in STATUSES.into_iter().map(Some).chain([None]) {
            all.push(Filter {
                workflow_run_id: None,
                status,
                app_name: app.clone(),
            });
        }
    }
    for run in runs {
        all.push(Filter {
            workflow_run_id: Some(*run),
            ..Filter::default()
        });
        all.push(Filter {
            workflow_run_id: Some(*run),
            status: Some(SessionStatus::Completed),
            app_name: None,
        });
    }
    all
}

/// The tenant's matching ids, newest first, counted from the sessions themselves.
async fn expected(pool: &PgPool, tenant: Uuid, filter: &Filter) -> Vec<Uuid> {
    sqlx::query_scalar(
        "SELECT id FROM app_callback_sessions WHERE tenant_id = $1 \
           AND ($2::uuid IS NULL OR workflow_run_id = $2) \
           AND ($3::text IS NULL OR status = $3) \
           AND ($4::text IS NULL OR app_name = $4) \
         ORDER BY created_at DESC, id DESC",
    )
    .bind(tenant)
    .bind(filter.workflow_run_id)
    .bind(filter.status.map(SessionStatus::as_str))
    .bind(filter.app_name.as_deref())
    .fetch_all(pool)
    .await
    .expect("expected")
}

/// Every filter's total and two of its pages equal what the sessions themselves say.
async fn assert_lists_match(pool: &PgPool, tenant: Uuid, runs: &[Uuid], when: &str) {
    for filter in filters(runs) {
        let all = expected(pool, tenant, &filter).await;
        for page in [
            Page {
                limit: 7,
                offset: 0,
            },
            Page {
                limit: 5,
                offset: 11,
            },
        ] {
            let found = list(pool, Tenant::new(tenant), &filter, page, Visibility::Full)
                .await
                .expect("list");
            assert_eq!(found.total, all.len() as i64, "{when}: total of {filter:?}");
            assert_eq!(found.total_is_estimate, Some(false), "{when}: {filter:?}");
            let ids: Vec<Uuid> = found.items.iter().map(|s| s.id).collect();
            let start = (page.offset as usize).min(all.len());
            let end = (start + page.limit as usize).min(all.len());
            assert_eq!(ids, all[start..end], "{when}: page {page:?} of {filter:?}");
        }
    }
}

async fn runs_of(pool: &PgPool, tenant: Uuid) -> Vec<Uuid> {
    sqlx::query_scalar(
        "SELECT DISTINCT workflow_run_id FROM app_callback_sessions WHERE tenant_id = $1 \
         ORDER BY 1 LIMIT 2",
    )
    .bind(tenant)
    .fetch_all(pool)
    .await
    .expect("runs")
}

/// Checks the lists while some of the tenant's changes are certainly not folded: their rows are
/// held (`FOR UPDATE`), so a fold waits for them. The stack's pipeline folds every second: when
/// one took the changes first, one more session is opened and the new changes are held.
async fn assert_lists_match_unfolded(pool: &PgPool, tenant: Uuid, runs: &[Uuid], when: &str) {
    loop {
        let mut held = pool.begin().await.expect("begin");
        let rows: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT 1 FROM app_callback_session_count_changes \
             WHERE tenant_id = $1 FOR UPDATE) AS held",
        )
        .bind(tenant)
        .fetch_one(&mut *held)
        .await
        .expect("changes held");
        if rows > 0 {
            assert_lists_match(pool, tenant, runs, when).await;
            held.rollback().await.expect("released");
            return;
        }
        held.rollback().await.expect("released");
        open(pool, tenant, 1).await;
    }
}

#[tokio::test]
async fn totals_and_pages_match_the_sessions_before_and_after_every_fold() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    // Another tenant's sessions move beside this one's and are never counted in it.
    let neighbour = Uuid::new_v4();
    open(&pool, neighbour, 30).await;

    open(&pool, tenant, 60).await;
    for _ in 0..3 {
        open(&pool, tenant, 1).await;
    }
    let runs = runs_of(&pool, tenant).await;
    assert_lists_match_unfolded(&pool, tenant, &runs, "opened, not folded").await;

    // Many rows in one statement, statuses of several apps at once.
    let older = |minutes: u32| format!("created_at < now() - interval '{minutes} minutes'");
    settle(
        &pool,
        tenant,
        &format!(
            "status = 'pending' AND {} AND app_name <> 'doc-verify'",
            older(20)
        ),
        "completed",
    )
    .await;
    settle(
        &pool,
        tenant,
        &format!(
            "status = 'pending' AND app_name = 'doc-verify' AND {}",
            older(30)
        ),
        "failed",
    )
    .await;
    settle(&pool, neighbour, "true", "timed_out").await;
    assert_lists_match_unfolded(&pool, tenant, &runs, "settled, not folded").await;

    fold(&pool).await;
    assert_lists_match(&pool, tenant, &runs, "folded").await;

    // An update that keeps the status moves nothing; one that changes the app moves it.
    sqlx::query("UPDATE app_callback_sessions SET output = '{\"ok\": true}' WHERE tenant_id = $1")
        .bind(tenant)
        .execute(&pool)
        .await
        .expect("outputs");
    settle(
        &pool,
        tenant,
        &format!(
            "status = 'completed' AND app_name = 'kyc-check' AND {}",
            older(50)
        ),
        "timed_out",
    )
    .await;
    sqlx::query(
        "UPDATE app_callback_sessions SET app_name = 'doc-verify' \
         WHERE tenant_id = $1 AND app_name = 'aml-screen' AND status = 'completed' \
           AND created_at < now() - interval '40 minutes'",
    )
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("app moved");
    sqlx::query(
        "DELETE FROM app_callback_sessions WHERE tenant_id = $1 AND status = 'failed' \
           AND created_at < now() - interval '45 minutes'",
    )
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("deleted");
    assert_lists_match_unfolded(&pool, tenant, &runs, "moved after a fold").await;

    // A fold not yet committed: readers see its changes where they were; a second fold started
    // meanwhile waits for its rows and finds them gone when it commits.
    open(&pool, tenant, 3).await;
    let mut first = pool.begin().await.expect("begin");
    sqlx::query_scalar::<_, i64>("SELECT app_callback_session_counts_fold()")
        .fetch_one(&mut *first)
        .await
        .expect("first fold");
    assert_lists_match(&pool, tenant, &runs, "a fold not yet committed").await;
    let second = tokio::spawn({
        let pool = pool.clone();
        async move { fold(&pool).await }
    });
    first.commit().await.expect("first fold committed");
    second.await.expect("second fold");
    assert_lists_match(
        &pool,
        tenant,
        &runs,
        "two folds, one after the other's rows",
    )
    .await;

    // Folds racing each other and writers of both tenants.
    let writers = async {
        for n in 0..10 {
            open(&pool, tenant, 2).await;
            open(&pool, neighbour, 1).await;
            let recent =
                format!("status = 'pending' AND created_at > now() - interval '{n} minutes'");
            settle(&pool, tenant, &recent, "completed").await;
        }
    };
    let folds = async {
        for _ in 0..10 {
            tokio::join!(fold(&pool), fold(&pool));
        }
    };
    tokio::join!(writers, folds);
    assert_lists_match(&pool, tenant, &runs, "written beside racing folds").await;
    fold(&pool).await;
    assert_lists_match(&pool, tenant, &runs, "folded again").await;
}

#[tokio::test]
async fn counts_that_drifted_are_counted_again_by_the_rebuild() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    open(&pool, tenant, 12).await;
    settle(&pool, tenant, "app_name = 'kyc-check'", "completed").await;
    let runs = runs_of(&pool, tenant).await;
    let completed_kyc = Filter {
        workflow_run_id: None,
        status: Some(SessionStatus::Completed),
        app_name: Some("kyc-check".into()),
    };
    let total = |pool: PgPool, filter: Filter| async move {
        list(
            &pool,
            Tenant::new(tenant),
            &filter,
            Page {
                limit: 1,
                offset: 0,
            },
            Visibility::Full,
        )
        .await
        .expect("list")
        .total
    };
    assert_eq!(total(pool.clone(), completed_kyc.clone()).await, 4);

    // What a write that bypassed the triggers leaves: counts that are wrong.
    sqlx::query(
        "INSERT INTO app_callback_session_count_changes (tenant_id, app_name, status, sessions) \
         VALUES ($1, 'kyc-check', 'completed', 5)",
    )
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("drift");
    assert_eq!(total(pool.clone(), completed_kyc.clone()).await, 9);

    let counted: i64 = sqlx::query_scalar("SELECT app_callback_session_counts_rebuild($1)")
        .bind(tenant)
        .fetch_one(&pool)
        .await
        .expect("rebuild");
    assert_eq!(counted, 12);
    assert_lists_match(&pool, tenant, &runs, "rebuilt").await;
}
