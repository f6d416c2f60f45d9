"""Corpora of e-mails written for the tests of link and code extraction: transactional e-mails
(`transactional`, tuning; `heldout`) and e-mails modelled on real sign-in products (`products`,
tuning; `products_heldout`, written first and never tuned on)."""
