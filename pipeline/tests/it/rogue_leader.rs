//! A group member that speaks the group protocol by hand, to put a consumer group into a state
//! librdkafka never makes: the leader assigns no partition to anybody, and keeps the group
//! formed by heartbeating. To the other members that looks as tansu's faulty formations do
//! (README, "known issues"): their partitions have a backlog and nobody consumes it.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::ConsumerProtocolAssignment;
use kafka_protocol::messages::consumer_protocol_subscription::ConsumerProtocolSubscription;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, RequestHeader, ResponseHeader,
    SyncGroupRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const JOIN_VERSION: i16 = 5;
const SYNC_VERSION: i16 = 3;
const HEARTBEAT_VERSION: i16 = 3;
/// Kafka's error codes: none, and the one that asks a member to join again.
const NONE: i16 = 0;
const MEMBER_ID_REQUIRED: i16 = 79;

pub struct RogueLeader {
    stream: TcpStream,
    correlation: i32,
    group: GroupId,
    member_id: StrBytes,
    generation: i32,
    subscription: Bytes,
}

impl RogueLeader {
    /// Joins `group`, which must not exist yet, so this member leads it.
    pub async fn lead(brokers: &str, group: &str, topic: &str) -> Self {
        let address = brokers.split(',').next().expect("a broker");
        let stream = TcpStream::connect(address).await.expect("broker reachable");
        let subscription = ConsumerProtocolSubscription::default()
            .with_topics(vec![StrBytes::from_string(topic.to_owned())]);
        let mut leader = Self {
            stream,
            correlation: 0,
            group: GroupId(StrBytes::from_string(group.to_owned())),
            member_id: StrBytes::default(),
            generation: -1,
            subscription: versioned(&subscription, 0),
        };
        let first = leader.join().await;
        assert_eq!(first.error_code, MEMBER_ID_REQUIRED, "{first:?}");
        leader.member_id = first.member_id;
        let joined = leader.join().await;
        assert_eq!(joined.error_code, NONE, "{joined:?}");
        assert_eq!(joined.leader, leader.member_id, "the first member leads");
        leader
    }

    /// Joins again until the group has `count` members; answers their ids.
    pub async fn wait_for_members(&mut self, count: usize, within: Duration) -> Vec<StrBytes> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let joined = self.join().await;
            assert_eq!(joined.error_code, NONE, "{joined:?}");
            if joined.members.len() >= count {
                self.generation = joined.generation_id;
                return joined.members.into_iter().map(|m| m.member_id).collect();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{count} members never joined"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Forms the group with an empty assignment for each of `members`.
    pub async fn assign_nothing(&mut self, members: &[StrBytes]) {
        let nothing = versioned(&ConsumerProtocolAssignment::default(), 0);
        let assignments = members
            .iter()
            .map(|member| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(member.clone())
                    .with_assignment(nothing.clone())
            })
            .collect();
        let request = SyncGroupRequest::default()
            .with_group_id(self.group.clone())
            .with_generation_id(self.generation)
            .with_member_id(self.member_id.clone())
            .with_protocol_type(Some(StrBytes::from_static_str("consumer")))
            .with_protocol_name(Some(StrBytes::from_static_str("range")))
            .with_assignments(assignments);
        let synced = self.call(request, SYNC_VERSION).await;
        assert_eq!(synced.error_code, NONE, "{synced:?}");
    }

    /// Heartbeats every second until the coordinator answers that the group rebalances
    /// (`true`), or `within` passes (`false`). Then it falls silent, as a dead member does.
    pub async fn hold_until_rebalance(mut self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        while tokio::time::Instant::now() < deadline {
            let request = HeartbeatRequest::default()
                .with_group_id(self.group.clone())
                .with_generation_id(self.generation)
                .with_member_id(self.member_id.clone());
            if self.call(request, HEARTBEAT_VERSION).await.error_code != NONE {
                return true;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        false
    }

    async fn join(&mut self) -> JoinGroupResponse {
        let protocol = JoinGroupRequestProtocol::default()
            .with_name(StrBytes::from_static_str("range"))
            .with_metadata(self.subscription.clone());
        let request = JoinGroupRequest::default()
            .with_group_id(self.group.clone())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(30_000)
            .with_member_id(self.member_id.clone())
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_protocols(vec![protocol]);
        self.call(request, JOIN_VERSION).await
    }

    /// Sends `request` and reads its response: both framed by their length.
    async fn call<R: Request>(&mut self, request: R, version: i16) -> R::Response {
        self.correlation += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(self.correlation)
            .with_client_id(Some(StrBytes::from_static_str("rogue-leader")));
        let mut frame = BytesMut::new();
        header
            .encode(&mut frame, R::header_version(version))
            .expect("header");
        request.encode(&mut frame, version).expect("request");
        let length = i32::try_from(frame.len()).expect("a small request");
        self.stream.write_i32(length).await.expect("sent");
        self.stream.write_all(&frame).await.expect("sent");
        let length = self.stream.read_i32().await.expect("answered");
        let mut answer = vec![0; usize::try_from(length).expect("a length")];
        self.stream.read_exact(&mut answer).await.expect("answered");
        let mut answer = Bytes::from(answer);
        let header = ResponseHeader::decode(&mut answer, R::Response::header_version(version))
            .expect("response header");
        assert_eq!(header.correlation_id, self.correlation);
        let response = R::Response::decode(&mut answer, version).expect("response");
        assert!(!answer.has_remaining(), "the whole response was read");
        response
    }
}

/// A consumer protocol message as it travels in a group request: its version, then itself.
fn versioned<M: Encodable>(message: &M, version: i16) -> Bytes {
    let mut bytes = BytesMut::new();
    bytes.put_i16(version);
    message.encode(&mut bytes, version).expect("encodable");
    bytes.freeze()
}
