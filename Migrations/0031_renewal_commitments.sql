-- Issue 43: a monthly plan with a 12-month commitment as Apple's renewal info states it
-- (`renewalBillingPlanType` and `commitmentInfo`, App Store Server API 1.21): whether the
-- commitment renews when its months end, into what, when and at what price. Rows stored before
-- are filled from their payloads; verifyReceipt's have none.
ALTER TABLE pending_renewal_info ADD COLUMN renewal_billing_plan_type TEXT;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_auto_renew_status INTEGER CHECK (commitment_auto_renew_status IN (0, 1));
ALTER TABLE pending_renewal_info ADD COLUMN commitment_auto_renew_product_id TEXT;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_renewal_date INTEGER;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_renewal_price INTEGER;
ALTER TABLE pending_renewal_info ADD COLUMN commitment_renewal_billing_plan_type TEXT;
ALTER TABLE renewal_history ADD COLUMN renewal_billing_plan_type TEXT;
ALTER TABLE renewal_history ADD COLUMN commitment_auto_renew_status INTEGER CHECK (commitment_auto_renew_status IN (0, 1));
ALTER TABLE renewal_history ADD COLUMN commitment_auto_renew_product_id TEXT;
ALTER TABLE renewal_history ADD COLUMN commitment_renewal_date INTEGER;
ALTER TABLE renewal_history ADD COLUMN commitment_renewal_price INTEGER;
ALTER TABLE renewal_history ADD COLUMN commitment_renewal_billing_plan_type TEXT;
UPDATE pending_renewal_info SET renewal_billing_plan_type = json_extract(raw_json, '$.renewalBillingPlanType'),
    commitment_auto_renew_status = json_extract(raw_json, '$.commitmentInfo.commitmentAutoRenewStatus'),
    commitment_auto_renew_product_id = json_extract(raw_json, '$.commitmentInfo.commitmentAutoRenewProductId'),
    commitment_renewal_date = json_extract(raw_json, '$.commitmentInfo.commitmentRenewalDate'),
    commitment_renewal_price = json_extract(raw_json, '$.commitmentInfo.commitmentRenewalPrice'),
    commitment_renewal_billing_plan_type = json_extract(raw_json, '$.commitmentInfo.commitmentRenewalBillingPlanType')
WHERE (raw_json LIKE '%"renewalBillingPlanType"%' OR raw_json LIKE '%"commitmentInfo"%') AND json_valid(raw_json);
UPDATE renewal_history SET renewal_billing_plan_type = json_extract(raw_json, '$.renewalBillingPlanType'),
    commitment_auto_renew_status = json_extract(raw_json, '$.commitmentInfo.commitmentAutoRenewStatus'),
    commitment_auto_renew_product_id = json_extract(raw_json, '$.commitmentInfo.commitmentAutoRenewProductId'),
    commitment_renewal_date = json_extract(raw_json, '$.commitmentInfo.commitmentRenewalDate'),
    commitment_renewal_price = json_extract(raw_json, '$.commitmentInfo.commitmentRenewalPrice'),
    commitment_renewal_billing_plan_type = json_extract(raw_json, '$.commitmentInfo.commitmentRenewalBillingPlanType')
WHERE (raw_json LIKE '%"renewalBillingPlanType"%' OR raw_json LIKE '%"commitmentInfo"%') AND json_valid(raw_json);
