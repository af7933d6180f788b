"""What people read: tables, the ``info`` documents, the diagnostics reports."""
