"""TFLM's tensor arena, predicted from a ``.tflite`` alone (issue 15 item 3); see docs/memory.md."""
