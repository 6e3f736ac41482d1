//! Page sizes and time windows: every bound of the public contract, declared once.
//! v1 clamps values beyond a bound (and records it); v2 rejects them with VALIDATION_ERROR.

/// Rows per page of one kind of list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize {
    pub default: u32,
    pub max: u32,
}

/// Default page size when `limit` is absent (both surfaces).
pub const DEFAULT_PAGE_SIZE: u32 = 25;

/// Most lists.
pub const MOST_LISTS: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 100 };
/// Events (`/v1/governance-events`, `/v2/events`).
pub const EVENTS: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 200 };
/// Proposal votes (`/v2/proposals/{proposalKey}/votes`).
pub const PROPOSAL_VOTES: PageSize = PageSize { default: DEFAULT_PAGE_SIZE, max: 500 };

/// The longest time window a list accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub max_days: u32,
}

impl Window {
    pub const fn max_ms(self) -> i64 {
        self.max_days as i64 * 86_400_000
    }
}

/// Events and signals.
pub const EVENTS_AND_SIGNALS_WINDOW: Window = Window { max_days: 90 };
/// Proposals and voter history.
pub const PROPOSALS_AND_HISTORY_WINDOW: Window = Window { max_days: 365 };

/// A list's page-size declaration, as a type so parameter types can carry it into the document.
pub trait PageSizeDecl: Send + Sync + 'static {
    const SIZE: PageSize;
    /// Name used in the document's schema names.
    const NAME: &'static str;
}

#[derive(Debug)]
pub struct MostLists;
impl PageSizeDecl for MostLists {
    const SIZE: PageSize = MOST_LISTS;
    const NAME: &'static str = "MostLists";
}

#[derive(Debug)]
pub struct Events;
impl PageSizeDecl for Events {
    const SIZE: PageSize = EVENTS;
    const NAME: &'static str = "Events";
}

#[derive(Debug)]
pub struct ProposalVotes;
impl PageSizeDecl for ProposalVotes {
    const SIZE: PageSize = PROPOSAL_VOTES;
    const NAME: &'static str = "ProposalVotes";
}
