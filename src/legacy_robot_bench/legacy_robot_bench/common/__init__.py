"""What every robot benchmark and soak needs: processes, listeners, floors, fuzzing, tables."""
