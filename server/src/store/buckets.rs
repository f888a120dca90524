//! A bucketed board's buckets (`docs/protocol.md`, "Buckets"): how many a season has and how
//! many players have a score in each (`lua/bucket_list.lua`, one read script on the board's slot).

use redis::Value;
use scorecast_shared::Id;
use serde::Serialize;

use super::Store;
use crate::error::AppResult;
use crate::{keys, reply, scripts};

/// One bucket of a season ([`Store::buckets`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BucketCount {
    /// Its number (1, 2, ...).
    pub bucket: u32,
    /// Players with a score in it (a player placed by `join` has none until they score).
    pub scored: u64,
}

/// A page of a season's buckets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BucketsPage {
    pub board: String,
    pub season: String,
    /// How many buckets the season has; the last is the one being filled.
    pub count: u32,
    /// Players placed in the bucket being filled so far.
    pub open_fill: u64,
    pub buckets: Vec<BucketCount>,
}

impl Store {
    /// A page of the buckets of season `season` (`None`: the current one) of a bucketed board,
    /// from bucket `offset + 1`, at most `limit` (`unknown_board`; `not_found` without
    /// `bucket_size`; `unknown_season`).
    pub async fn buckets(
        &self,
        board: &Id,
        season: Option<&Id>,
        offset: u32,
        limit: u32,
    ) -> AppResult<BucketsPage> {
        let mut c = self.conn.clone();
        let reply: Value = scripts::BUCKET_LIST
            .key(keys::config(board))
            .arg(season.map(Id::as_str).unwrap_or(""))
            .arg(self.clock.arg())
            .arg(offset)
            .arg(limit)
            .invoke_async(&mut c)
            .await?;
        let r = reply::ok(reply)?;
        let bad = || reply::bad("buckets");
        let int = |v: Option<&Value>| v.and_then(reply::int).ok_or_else(bad);
        let season = r.first().and_then(reply::text).ok_or_else(bad)?;
        let count = u32::try_from(int(r.get(1))?).map_err(|_| bad())?;
        let open_fill = int(r.get(2))?.max(0) as u64;
        let rows = r.get(3..).unwrap_or_default();
        if rows.len() % 2 != 0 {
            return Err(bad());
        }
        let buckets = rows
            .chunks(2)
            .map(|b| {
                Ok(BucketCount {
                    bucket: u32::try_from(int(b.first())?).map_err(|_| bad())?,
                    scored: int(b.get(1))?.max(0) as u64,
                })
            })
            .collect::<AppResult<Vec<_>>>()?;
        Ok(BucketsPage {
            board: board.to_string(),
            season,
            count,
            open_fill,
            buckets,
        })
    }
}
