"""Revisit control: tiers by popularity or influence, change rates and refresh policies."""

from __future__ import annotations

from topicrawl.revisit.tiers import DAY, TierPolicy, assign_tiers, period_of, tier_of_period

__all__ = ["DAY", "TierPolicy", "assign_tiers", "period_of", "tier_of_period"]
