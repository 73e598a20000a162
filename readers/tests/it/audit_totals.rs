//! `GET /audit-events` answers, for every filter, the page and the total that counting the
//! tenant's events themselves would: whatever inserted or removed them (one event at a time or
//! many at once), before the pipeline folds the changes into the kept counts, after it, with
//! folds racing writers, and after counts that drifted were rebuilt.

use chrono::{Duration, Utc};
use readers::audit::{Filter, list};
use readers::{Page, Tenant};
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::database;

const ACTIONS: [&str; 3] = ["app.installed", "case.decided", "rule.published"];

/// `count` events of `tenant` in one statement, one a minute back from now, the actions and
/// two actors taking turns.
async fn record(pool: &PgPool, tenant: Uuid, count: i64) {
    sqlx::query(
        "INSERT INTO audit_events (id, tenant_id, action, actor_type, actor_id, actor_name, \
         subject_type, subject_id, payload, occurred_at) \
         SELECT gen_random_uuid(), $1, \
                (ARRAY['app.installed', 'case.decided', 'rule.published'])[1 + i % 3], \
                'human', 'user-' || (i % 2), 'User', 'app', 'subject-' || i, '{}', \
                now() - make_interval(secs => i * 60) \
         FROM generate_series(0, $2 - 1) AS i",
    )
    .bind(tenant)
    .bind(count)
    .execute(pool)
    .await
    .expect("events recorded");
}

async fn fold(pool: &PgPool) {
    sqlx::query_scalar::<_, i64>("SELECT audit_event_counts_fold()")
        .fetch_one(pool)
        .await
        .expect("fold");
}

/// Every shape of filter: none, each action, two, one absent, an actor, one absent, a window,
/// and those mixed.
fn filters() -> Vec<Filter> {
    let window = (
        Some(Utc::now() - Duration::minutes(40)),
        Some(Utc::now() - Duration::minutes(10)),
    );
    let mut all = vec![Filter::default()];
    for actions in [
        vec![ACTIONS[0]],
        vec![ACTIONS[1]],
        vec![ACTIONS[2]],
        vec![ACTIONS[0], ACTIONS[2]],
        vec!["absent.action"],
    ] {
        let actions: Vec<String> = actions.into_iter().map(str::to_owned).collect();
        all.push(Filter {
            actions: actions.clone(),
            ..Filter::default()
        });
        all.push(Filter {
            actions: actions.clone(),
            actor: Some("user-1".into()),
            ..Filter::default()
        });
        all.push(Filter {
            actions,
            actor: Some("user-1".into()),
            from: window.0,
            to: None,
        });
    }
    for actor in ["user-0", "nobody"] {
        all.push(Filter {
            actor: Some(actor.into()),
            ..Filter::default()
        });
    }
    all.push(Filter {
        from: window.0,
        to: window.1,
        ..Filter::default()
    });
    all
}

/// The tenant's matching ids, newest first, from the events themselves.
async fn expected(pool: &PgPool, tenant: Uuid, filter: &Filter) -> Vec<Uuid> {
    sqlx::query_scalar(
        "SELECT id FROM audit_events WHERE tenant_id = $1 \
           AND (cardinality($2::text[]) = 0 OR action = ANY($2)) \
           AND ($3::text IS NULL OR actor_id = $3) \
           AND ($4::timestamptz IS NULL OR occurred_at >= $4) \
           AND ($5::timestamptz IS NULL OR occurred_at <= $5) \
         ORDER BY occurred_at DESC, id DESC",
    )
    .bind(tenant)
    .bind(&filter.actions)
    .bind(filter.actor.as_deref())
    .bind(filter.from)
    .bind(filter.to)
    .fetch_all(pool)
    .await
    .expect("expected")
}

/// Every filter's total and two of its pages equal what the events themselves say.
async fn assert_lists_match(pool: &PgPool, tenant: Uuid, when: &str) {
    for filter in filters() {
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
            let found = list(pool, Tenant::new(tenant), &filter, page)
                .await
                .expect("list");
            assert_eq!(found.total, all.len() as i64, "{when}: total of {filter:?}");
            assert_eq!(found.total_is_estimate, Some(false), "{when}: {filter:?}");
            let ids: Vec<Uuid> = found.items.iter().map(|e| e.id).collect();
            let start = (page.offset as usize).min(all.len());
            let end = (start + page.limit as usize).min(all.len());
            assert_eq!(ids, all[start..end], "{when}: page {page:?} of {filter:?}");
        }
    }
}

/// Checks the lists while some of the tenant's changes are certainly not folded: their rows are
/// held (`FOR UPDATE`), so a fold waits for them. The stack's pipeline folds every second: when
/// one took the changes first, one more event is recorded and the new changes are held.
async fn assert_lists_match_unfolded(pool: &PgPool, tenant: Uuid, when: &str) {
    loop {
        let mut held = pool.begin().await.expect("begin");
        let rows: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT 1 FROM audit_event_count_changes \
             WHERE tenant_id = $1 FOR UPDATE) AS held",
        )
        .bind(tenant)
        .fetch_one(&mut *held)
        .await
        .expect("changes held");
        if rows > 0 {
            assert_lists_match(pool, tenant, when).await;
            held.rollback().await.expect("released");
            return;
        }
        held.rollback().await.expect("released");
        record(pool, tenant, 1).await;
    }
}

#[tokio::test]
async fn totals_and_pages_match_the_events_before_and_after_every_fold() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    // Another tenant's events are recorded beside this one's and never counted in it.
    let neighbour = Uuid::new_v4();
    record(&pool, neighbour, 30).await;

    record(&pool, tenant, 60).await;
    for _ in 0..3 {
        record(&pool, tenant, 1).await;
    }
    assert_lists_match_unfolded(&pool, tenant, "recorded, not folded").await;
    fold(&pool).await;
    assert_lists_match(&pool, tenant, "folded").await;

    // Removed by an operator, many at once.
    sqlx::query(
        "DELETE FROM audit_events WHERE tenant_id = $1 AND action = 'case.decided' \
           AND occurred_at < now() - interval '30 minutes'",
    )
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("deleted");
    assert_lists_match_unfolded(&pool, tenant, "removed after a fold").await;

    // Folds racing each other and writers of both tenants.
    let writers = async {
        for _ in 0..10 {
            record(&pool, tenant, 2).await;
            record(&pool, neighbour, 1).await;
        }
    };
    let folds = async {
        for _ in 0..10 {
            tokio::join!(fold(&pool), fold(&pool));
        }
    };
    tokio::join!(writers, folds);
    assert_lists_match(&pool, tenant, "written beside racing folds").await;
    fold(&pool).await;
    assert_lists_match(&pool, tenant, "folded again").await;
}

#[tokio::test]
async fn counts_that_drifted_are_counted_again_by_the_rebuild() {
    let pool = database().await;
    let tenant = Uuid::new_v4();
    record(&pool, tenant, 12).await;
    let installed = Filter {
        actions: vec![ACTIONS[0].into()],
        ..Filter::default()
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
        )
        .await
        .expect("list")
        .total
    };
    assert_eq!(total(pool.clone(), installed.clone()).await, 4);

    // What a write that bypassed the triggers leaves: counts that are wrong.
    sqlx::query(
        "INSERT INTO audit_event_count_changes (tenant_id, action, actor_id, events) \
         VALUES ($1, 'app.installed', 'user-0', 5)",
    )
    .bind(tenant)
    .execute(&pool)
    .await
    .expect("drift");
    assert_eq!(total(pool.clone(), installed).await, 9);

    let counted: i64 = sqlx::query_scalar("SELECT audit_event_counts_rebuild($1)")
        .bind(tenant)
        .fetch_one(&pool)
        .await
        .expect("rebuild");
    assert_eq!(counted, 12);
    assert_lists_match(&pool, tenant, "rebuilt").await;
}
