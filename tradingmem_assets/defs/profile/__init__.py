"""Memory layers and the customer profile (SPEC section 10), group ``profile``.

conversation_message -> session_contexts (short-term, never feeds the profile);
memory_unit + memory_evidence -> memory_promotions -> user_facts (long-term);
customers + questionnaire_results + customer_transactions + user_facts -> fin_customer_profile
-> profile_snapshots, advisor_customer_view; kb_documents -> customer_kb (public only).
"""
