from celery import shared_task

from corpus.models import Retriever
from labelling.models import Pool
from labelling.services import pools


@shared_task(acks_late=True, max_retries=3, default_retry_delay=10)
def pool_batch(pool_id: int, retriever_id: int, question_ids: list[int]) -> None:
    pool = Pool.objects.select_related("question_set").filter(pk=pool_id).first()
    retriever = Retriever.objects.filter(pk=retriever_id).first()
    if pool is not None and retriever is not None:
        pools.pool_batch(pool=pool, retriever=retriever, question_ids=question_ids)
