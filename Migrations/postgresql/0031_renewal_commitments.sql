-- Issue 43: a commitment plan's renewal info: see Migrations/0031_renewal_commitments.sql.
ALTER TABLE pending_renewal_info ADD COLUMN renewal_billing_plan_type TEXT;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_auto_renew_status BIGINT CHECK (commitment_auto_renew_status IN (0, 1));
ALTER TABLE pending_renewal_info ADD COLUMN commitment_auto_renew_product_id TEXT;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_renewal_date BIGINT;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_renewal_price BIGINT;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_renewal_billing_plan_type TEXT;
ALTER TABLE renewal_history ADD COLUMN renewal_billing_plan_type TEXT;
ALTER TABLE renewal_history ADD COLUMN commitment_auto_renew_status BIGINT CHECK (commitment_auto_renew_status IN (0, 1));
ALTER TABLE renewal_history ADD COLUMN commitment_auto_renew_product_id TEXT;
ALTER TABLE renewal_history ADD COLUMN commitment_renewal_date BIGINT;
ALTER TABLE renewal_history ADD COLUMN commitment_renewal_price BIGINT;
ALTER TABLE renewal_history ADD COLUMN commitment_renewal_billing_plan_type TEXT;
UPDATE pending_renewal_info SET renewal_billing_plan_type = raw_json::jsonb ->> 'renewalBillingPlanType',
    commitment_auto_renew_status = (raw_json::jsonb #>> '{commitmentInfo,commitmentAutoRenewStatus}')::bigint,
    commitment_auto_renew_product_id = raw_json::jsonb #>> '{commitmentInfo,commitmentAutoRenewProductId}',
    commitment_renewal_date = (raw_json::jsonb #>> '{commitmentInfo,commitmentRenewalDate}')::bigint,
    commitment_renewal_price = (raw_json::jsonb #>> '{commitmentInfo,commitmentRenewalPrice}')::bigint,
    commitment_renewal_billing_plan_type = raw_json::jsonb #>> '{commitmentInfo,commitmentRenewalBillingPlanType}'
WHERE raw_json LIKE '%"renewalBillingPlanType"%' OR raw_json LIKE '%"commitmentInfo"%';
UPDATE renewal_history SET renewal_billing_plan_type = raw_json::jsonb ->> 'renewalBillingPlanType',
    commitment_auto_renew_status = (raw_json::jsonb #>> '{commitmentInfo,commitmentAutoRenewStatus}')::bigint,
    commitment_auto_renew_product_id = raw_json::jsonb #>> '{commitmentInfo,commitmentAutoRenewProductId}',
    commitment_renewal_date = (raw_json::jsonb #>> '{commitmentInfo,commitmentRenewalDate}')::bigint,
    commitment_renewal_price = (raw_json::jsonb #>> '{commitmentInfo,commitmentRenewalPrice}')::bigint,
    commitment_renewal_billing_plan_type = raw_json::jsonb #>> '{commitmentInfo,commitmentRenewalBillingPlanType}'
WHERE raw_json LIKE '%"renewalBillingPlanType"%' OR raw_json LIKE '%"commitmentInfo"%';
