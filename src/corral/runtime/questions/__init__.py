"""ask_question: questions to a person that park the run until answered."""

from corral.runtime.questions.model import Answer, AnswerInput, AskedQuestion, QuestionRecord
from corral.runtime.questions.service import Questions

__all__ = [
    "Answer",
    "AnswerInput",
    "AskedQuestion",
    "QuestionRecord",
    "Questions",
]
