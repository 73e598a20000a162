use uuid::Uuid;

/// The tenant a read is scoped to. Every reader takes one first, so no query can forget it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tenant(Uuid);

impl Tenant {
    pub fn new(id: Uuid) -> Self {
        Self(id)
    }

    pub fn id(&self) -> Uuid {
        self.0
    }
}
