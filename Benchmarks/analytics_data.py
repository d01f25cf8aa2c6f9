"""Writes a subscription business into a migrated receiptd SQLite database, for Benchmarks/analytics.sh.

SUBSCRIBERS customers over the two years before now, deterministic (seeded): each buys a monthly
(90 %) or annual subscription in one of four storefronts (USA/USD, DEU/EUR, GBR/GBP, JPN/JPY at
that storefront's price), 30 % after a 7-day free trial; each paid period renews until the
customer churns (1 % a month, 25 % a year) or now; 3 % of paid periods are refunded three days
in; whoever is still subscribed renews (auto-renew on). About ten transactions per subscriber,
each with a raw signed payload of the usual size (about 1 KB). Rows go straight into
subscribers, ownership, transactions (with money, price source `store`) and pending_renewal_info,
10,000 subscribers a transaction. Prints what it wrote.

Usage: analytics_data.py DATABASE SUBSCRIBERS [NOW_MS]
"""
import json
import random
import sqlite3
import sys
import time

DAY = 86_400_000
database, subscribers = sys.argv[1], int(sys.argv[2])
now = int(sys.argv[3]) if len(sys.argv) > 3 else int(time.time() * 1000)
rng = random.Random(20261125)
STOREFRONTS = [("USA", "USD", 9_990, 49_990), ("DEU", "EUR", 9_990, 49_990), ("GBR", "GBP", 8_990, 44_990),
               ("JPN", "JPY", 1_500_000, 7_000_000)]
BUNDLE = "com.example.app"

db = sqlite3.connect(database)
db.execute("PRAGMA synchronous = OFF")
db.execute("PRAGMA journal_mode = WAL")
transactions = []
owners = []
renewals = []
users = []
next_id = 2_000_000_000_000_000


def raw(tid, original, product, purchased, expires, price, currency, storefront):
    """What Apple's signed transaction says, at its usual size (the charts never read it)."""
    return json.dumps({
        "transactionId": tid, "originalTransactionId": original, "webOrderLineItemId": str(int(tid) + 7),
        "bundleId": BUNDLE, "productId": product, "subscriptionGroupIdentifier": "21000001", "purchaseDate": purchased,
        "originalPurchaseDate": purchased, "expiresDate": expires, "quantity": 1, "type": "Auto-Renewable Subscription",
        "inAppOwnershipType": "PURCHASED", "signedDate": purchased, "environment": "Production",
        "transactionReason": "RENEWAL", "storefront": storefront, "storefrontId": "143441", "price": price,
        "currency": currency, "appTransactionId": "704213861059478529", "appAccountToken": None,
        "receipt_note": "x" * 400})


def row(tid, original, product, purchased, first, expires, cancelled, price, currency, storefront, trial, reason):
    return (tid, original, product, BUNDLE, "production", purchased, first, expires, cancelled, 1 if trial else 0, 0, 0,
            "PURCHASED", "group", raw(tid, original, product, purchased, expires, price, currency, storefront),
            purchased, purchased, purchased, 0 if trial else price, currency, "store",
            storefront, 1 if trial else None, "FREE_TRIAL" if trial else None, reason,
            "REFUND_FULL" if cancelled else None)


written = [0, 0]


def flush():
    db.executemany("INSERT INTO subscribers (app_user_id, created_at, updated_at) VALUES (?, ?, ?)", users)
    db.executemany("INSERT INTO ownership (original_transaction_id, app_user_id, since) VALUES (?, ?, ?)", owners)
    db.executemany(
        """INSERT INTO transactions (transaction_id, original_transaction_id, product_id, bundle_id, environment, purchase_date,
           original_purchase_date, expires_date, cancellation_date, is_trial_period, is_in_intro_offer_period, is_upgraded,
           ownership_type, subscription_group_id, raw_json, first_seen_at, updated_at, stated_at, price, currency, price_source,
           storefront, offer_type, offer_discount_type, transaction_reason, revocation_type)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", transactions)
    db.executemany(
        """INSERT INTO pending_renewal_info (original_transaction_id, product_id, auto_renew_product_id, auto_renew_status,
           environment, raw_json, updated_at) VALUES (?, ?, ?, ?, 'production', '{}', ?)""", renewals)
    db.commit()
    written[0] += len(users)
    written[1] += len(transactions)
    for rows in (users, owners, transactions, renewals):
        rows.clear()


for n in range(subscribers):
    user = f"bench-{n}"
    start = now - rng.randrange(730 * DAY)
    annual = rng.random() < 0.1
    product = "annual" if annual else "monthly"
    storefront, currency, monthly_price, annual_price = rng.choice(STOREFRONTS)
    price = annual_price if annual else monthly_price
    length = 365 * DAY if annual else 30 * DAY
    churn = 0.25 if annual else 0.01
    original = str(next_id)
    t = start
    first = True
    alive = True
    if rng.random() < 0.3:  # a free trial first
        next_id += 1
        transactions.append(row(original, original, product, t, start, t + 7 * DAY, None, price, currency, storefront,
                                True, "PURCHASE"))
        t += 7 * DAY
        first = False
        alive = rng.random() >= 0.4  # 40 % abandon at the trial's end
    while alive and t <= now:
        tid = original if first else str(next_id)
        next_id += 1
        refunded = t + 3 * DAY if rng.random() < 0.03 and t + 3 * DAY <= now else None
        transactions.append(row(tid, original, product, t, start, t + length, refunded, price, currency, storefront,
                                False, "PURCHASE" if first else "RENEWAL"))
        first = False
        t += length
        alive = rng.random() >= churn
    users.append((user, start, now))
    owners.append((original, user, start))
    renewals.append((original, product, product, 1 if alive else 0, now))
    if len(users) == 10_000:
        flush()
flush()
# The ECB's rates for every working day of the two years (weekends take Friday's, as the ECB's
# do), so that figures convert to the reporting currency as they would with rates loaded.
rates = []
for d in range((now - 731 * DAY) // DAY, now // DAY + 1):
    if (d + 3) % 7 < 5:  # Monday to Friday (1970-01-01 was a Thursday)
        day = time.strftime("%Y-%m-%d", time.gmtime(d * 86_400))
        drift = (d % 97) / 10_000
        rates += [(day, "USD", f"{1.08 + drift:.4f}"), (day, "GBP", f"{0.85 + drift:.4f}"), (day, "JPY", f"{160 + drift * 100:.2f}")]
db.executemany("INSERT INTO exchange_rates (day, currency, per_euro) VALUES (?, ?, ?)", rates)
db.commit()
db.execute("ANALYZE")
print(f"wrote {written[0]} subscribers, {written[1]} transactions, {written[0]} renewal infos")
