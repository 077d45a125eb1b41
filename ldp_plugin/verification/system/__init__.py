"""System-level verification: what a deployment runs, not only mechanisms — the device with its
keystore and ledger (:mod:`.device`), the shuffler (:mod:`.shuffler`), the analyzer
(:mod:`.analyzer`) and every registered name through the device's reply path (:mod:`.wire`), with
their seeded bugs (:mod:`.seeded_bugs`). These modules sit above the federated runtime they
verify (a layer of their own in ARCHITECTURE.md); nothing below imports them."""
